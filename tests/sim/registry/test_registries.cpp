// Every named kind is a sim::Registry whose entry i describes row i of the kind's typed table,
// and every failed lookup says the same thing: "<where>: unknown <kind> '<name>'; expected one
// of <the registry's names>" (issue 12).
#include <doctest/doctest.h>

#include "models/collectives/algorithm.hpp"
#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "topologies/registry.hpp"
#include "traces/zoo/zoo.hpp"

using shardsim::ConfigError;
namespace text = shardsim::text;

namespace {

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("entry i of each registry describes row i of its table") {
  namespace c = shardsim::compute;
  namespace o = shardsim::opt;
  namespace z = shardsim::zoo;
  namespace s = shardsim::step;
  REQUIRE(c::device_registry().entries().size() == c::device_presets().size());
  for (std::size_t i = 0; i < c::device_presets().size(); ++i) {
    CHECK(c::device_registry().entries()[i].name == c::device_presets()[i].name);
    CHECK(c::device_registry().entries()[i].source == c::device_presets()[i].source);
  }
  REQUIRE(o::optimizer_registry().entries().size() == o::optimizers().size());
  for (std::size_t i = 0; i < o::optimizers().size(); ++i) CHECK(o::optimizer_registry().entries()[i].name == o::optimizers()[i].name);
  REQUIRE(z::model_registry().entries().size() == z::models().size());
  for (std::size_t i = 0; i < z::models().size(); ++i) CHECK(z::model_registry().entries()[i].name == z::models()[i].name);
  REQUIRE(s::strategy_registry().entries().size() == s::strategies().size() + 1);
  CHECK(s::strategy_registry().entries().back().name == "trace");
  CHECK(s::strategy_registry().entries()[1].params.size() == s::strategies()[1].params.size());
  REQUIRE(shardsim::coll::algorithm_registry().entries().size() == shardsim::coll::algorithms().size());
  REQUIRE(shardsim::topo::builder_registry().entries().size() == shardsim::topo::builders().size());
  const auto& torus = shardsim::topo::builder_registry().entries().at(0);
  CHECK(torus.name == "torus");
  CHECK(torus.params.at(0).key == "dims");
  CHECK(torus.params.at(3).default_value == "1");  // wrap
}

TEST_CASE("one unknown-name message for every kind, listing the registry's names") {
  namespace c = shardsim::compute;
  CHECK(error_of([] { (void)c::find_device("v100", "--device"); }) ==
        "--device: unknown device 'v100'; expected one of " + text::join(c::device_registry().names()));
  CHECK(error_of([] { (void)shardsim::opt::find_optimizer("adagrad", "--optimizer"); }) ==
        "--optimizer: unknown optimizer 'adagrad'; expected one of " + text::join(shardsim::opt::optimizer_registry().names()));
  CHECK(error_of([] { (void)shardsim::zoo::find_model("gpt5", "--model"); }) ==
        "--model: unknown model 'gpt5'; expected one of " + text::join(shardsim::zoo::model_registry().names()));
  CHECK(error_of([] { (void)shardsim::step::strategy_from_string("fsdp", "--strategy", shardsim::step::StrategySet::with_trace); }) ==
        "--strategy: unknown strategy 'fsdp'; expected one of replicated, sharded, zero1, zero2, zero3, trace");
  // Without trace: the weight-update strategies only.
  CHECK(error_of([] { (void)shardsim::step::strategy_from_string("trace", "--strategies"); }) ==
        "--strategies: unknown strategy 'trace'; expected one of replicated, sharded, zero1, zero2, zero3");
  CHECK(error_of([] { (void)shardsim::topo::link_class_from_string("fibre", "/class"); }) ==
        "/class: unknown link class 'fibre'; expected one of ici, nvlink, pcie, ib, ethernet, loopback");
  // The device a preset names resolves in one place (plan and step alike): dgx-a100 -> a100-80gb.
  CHECK(c::device_for_model("a100", "--hardware").name == "a100-80gb");
}
