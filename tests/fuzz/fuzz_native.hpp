#pragma once
// For the importer targets: an imported trace is what `trace import` writes (JSON text) and
// `step --trace` reads back, so it must be writable and load back unchanged.
#include <cstdio>
#include <cstdlib>

#include "sim/error.hpp"
#include "traces/trace/trace.hpp"

namespace shardsim::fuzz {

inline void expect_loadable(const trace::Trace& t) {
  try {
    const auto text = trace::to_json(t).dump(1);
    if (trace::to_json(trace::parse_trace(text, "written back")).dump(1) != text) {
      std::fprintf(stderr, "fuzz: the imported trace changes when written and read back\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: the imported trace cannot be written and read back: %s\n", e.what());
    std::abort();
  }
}

}  // namespace shardsim::fuzz
