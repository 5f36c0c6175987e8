// Benchmark logs (traces/logs/parse.hpp parse_log): nccl-tests text and -J JSON, OSU tables
// and our JSON Lines records, the format detected from the content as the CLI does.
// parse.hpp promises "never a wrong record": every record parsed must also pass the record
// validation that reading it back from JSONL applies (ranks >= 1, finite times, ...), once
// written as JSON text.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "fuzz_common.hpp"
#include "traces/logs/parse.hpp"
#include "traces/logs/record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::logs;
  std::vector<BenchRecord> records;
  shardsim::fuzz::expect_config_errors_only([&] { records = parse_log(shardsim::fuzz::as_text(data, size), "fuzz.log"); });
  for (const auto& r : records) {
    try {  // as `bench parse` writes it and the JSONL reader reads it
      std::istringstream line(to_json(r).dump() + "\n");
      (void)read_jsonl(line, "written back");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_logs: a parsed record cannot be written and read back: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
