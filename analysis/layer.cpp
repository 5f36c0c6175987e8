// Anchor translation unit of the analysis library (its parts live in subfolders).
namespace shardsim::analysis {
const char* layer_name() { return "analysis"; }
}  // namespace shardsim::analysis
