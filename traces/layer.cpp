// Anchor translation unit of the traces layer (the layer's parts live in subfolders).
namespace shardsim::traces {
const char* layer_name() { return "traces"; }
}  // namespace shardsim::traces
