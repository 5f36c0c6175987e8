#pragma once
// The flagship study's figures (issue 17), as Xu et al. 2020 (arXiv 2004.13336, Figs. 6-8) and
// the ZeRO paper (Rajbhandari et al. 2020, Fig. 1 and Table 1) show such results:
//   speedup.csv / .gp   speedup of each strategy over replicated against the data-parallel
//                       size N, one panel per system x model, linear y, one line per strategy;
//                       configurations that do not fit in HBM are drawn as an 'x' at the
//                       speedup they would have if they fit (never dropped);
//   breakdown.csv / .gp the step time of each strategy stacked into forward, backward, exposed
//                       communication and weight update, at one N per panel;
//   memory.csv / .gp    memory per device of each strategy stacked into parameters, gradients,
//                       optimizer state, activations and buffers, at the same N, against the
//                       device's HBM capacity (a horizontal line).
// Each .gp script reads only its CSV (DESIGN 7: the CSV stays the source of truth) and draws
// both <name>.svg and <name>.png when run with `gnuplot <name>.gp` in the output folder.
//
// Number formats are fixed (times and speedups to 6 significant digits, bytes as integers) so
// that the CSVs are byte-identical for the same inputs and robust to last-bit differences of
// floating point between builds. Same input, same bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::plot {

/// One panel: a system and a model, with what the titles say about the run.
struct StudyPanel {
  std::string system;       ///< "TPU v3 pod"
  std::string model;        ///< zoo name, "gpt3-13b"
  std::string model_label;  ///< "GPT-3 13B"
  std::string workload;     ///< "batch 1 x 2048 tokens/device, checkpointing"
  std::string precision;    ///< "mixed precision (bf16 + fp32 master), Adam"
  std::uint64_t hbm_bytes = 0;  ///< device HBM capacity
};

/// One simulated step: a panel's model on N devices with one strategy.
struct StudyPoint {
  std::size_t panel = 0;  ///< index into StudyFigures::panels
  std::uint64_t dp = 0;   ///< N
  std::string strategy;   ///< one of StudyFigures::strategies
  bool fits = false;      ///< peak memory within HBM
  double time_s = 0;      ///< step time if it fit (seconds)
  double forward_s = 0, backward_s = 0, exposed_comm_s = 0, update_s = 0;
  double params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0, activations_bytes = 0, buffers_bytes = 0;
};

struct StudyFigures {
  std::string title;                    ///< what the study is, for the figure titles
  std::vector<std::string> strategies;  ///< line / bar order; strategies[0] is the baseline
  std::vector<std::uint64_t> sizes;     ///< the data-parallel sizes, ascending
  std::vector<StudyPanel> panels;       ///< drawn in rows of `columns`
  std::vector<StudyPoint> points;       ///< every (panel, size, strategy) exactly once
  std::size_t columns = 4;
};

/// Throws std::invalid_argument when a (panel, size, strategy) point is missing or repeated,
/// a panel index is out of range, or a time is not positive: the figures would lie.
void check_complete(const StudyFigures& f);

/// The breakdown / memory panels' N: the largest size (title and CSV say which).
std::uint64_t bar_size(const StudyFigures& f);

/// Columns: panel,system,model,dp,strategy,fits,replicated_fits,time_if_it_fit_s,
/// speedup_vs_replicated. Rows by panel, strategy, N. speedup = baseline time if it fit /
/// this time if it fit (both "if it fit": the fits columns say which are hypothetical).
std::string speedup_csv(const StudyFigures& f);
/// Columns: panel,system,model,dp,strategy,position,fits,forward_s,backward_s,
/// exposed_comm_s,update_s,time_if_it_fit_s at N = bar_size(f). position = strategy index.
std::string breakdown_csv(const StudyFigures& f);
/// Columns: panel,system,model,dp,strategy,position,fits,params_bytes,grads_bytes,
/// optimizer_bytes,activations_bytes,buffers_bytes,peak_bytes,hbm_bytes at N = bar_size(f).
std::string memory_csv(const StudyFigures& f);

/// gnuplot scripts reading speedup.csv / breakdown.csv / memory.csv from the current folder
/// and writing <name>.svg and <name>.png there. Deterministic text.
std::string speedup_gp(const StudyFigures& f);
std::string breakdown_gp(const StudyFigures& f);
std::string memory_gp(const StudyFigures& f);

/// Runs `gnuplot <script>` with `dir` as its working folder (the scripts name their files
/// relative to it). Returns nullopt on success, else why not: "gnuplot not installed" or
/// "gnuplot failed on <script> in <dir> (status N)". gnuplot's own messages go to stderr.
std::optional<std::string> run_gnuplot_in(const std::string& dir, const std::string& script);

/// "16", "256", "1K", "4K", "1M": a size label for the log2 axis.
std::string size_label(std::uint64_t n);

}  // namespace shardsim::plot
