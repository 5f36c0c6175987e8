// Kineto / PyTorch profiler importer against the HTA fixtures (tests/data/fixtures/kineto).
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "traces/importers/info.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/kineto.hpp"
#include "traces/importers/native.hpp"

using namespace shardsim;
using namespace shardsim::importers;
using shardsim::test::error_of;
using shardsim::test::fixture;

namespace {

KinetoTrace load(const std::string& rel) {
  const auto path = fixture("kineto/" + rel);
  return decode_kineto(read_input(path), path);
}

const KinetoCollective* first_of(const KinetoTrace& t, CommKind k) {
  for (const auto& op : t.gpu_ops) {
    if (op.collective && op.collective->kind == k) return &*op.collective;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("kineto NCCL excerpt: newer kernel args, ac2g flows") {
  const auto t = load("nccl_allreduce_excerpt.json");
  CHECK(t.events == 35);
  CHECK(t.count("kernel") == 3);
  CHECK(t.nccl_kernels() == 2);
  CHECK(t.cpu_ops == 8);
  CHECK(t.launches.size() == 3);
  CHECK(t.flow_pairs == 3);
  CHECK(t.linked_by_flow == 3);
  CHECK(t.linked_by_correlation == 0);
  CHECK(t.world_size == 2);
  const auto* ar = first_of(t, CommKind::all_reduce);
  REQUIRE(ar != nullptr);
  CHECK(ar->source == KinetoCollective::Source::kernel_args);
  CHECK(ar->in_elems == 6637568);
  CHECK(ar->element_bytes == 4);              // dtype Float
  CHECK(ar->size_bytes == 6637568ull * 4);    // all-reduce S = input bytes
  CHECK(ar->group_size == 2);
  CHECK(ar->ranks == std::vector<std::int64_t>{0, 1});
  const auto* bc = first_of(t, CommKind::broadcast);
  REQUIRE(bc != nullptr);
  CHECK(bc->size_bytes == 53120ull * 4);
  // The gemm kernel is the only compute op: 114.911 us.
  const auto info = trace_info(fixture("kineto/nccl_allreduce_excerpt.json"));
  CHECK(info.format == Format::kineto);
  CHECK(info.compute_time_s == doctest::Approx(114.911e-6).scale(0));

  const auto nat = to_native(t, {});
  REQUIRE(nat.ops.size() == 3);
  CHECK(nat.ops[0].collective->kind == coll::OpKind::broadcast);
  CHECK(nat.ops[1].name.starts_with("void cutlass::Kernel"));
  CHECK_FALSE(nat.ops[1].collective.has_value());
  CHECK(nat.ops[2].collective->kind == coll::OpKind::allreduce);
  CHECK(nat.ops[2].collective->group_size == 2);
  CHECK(nat.ops[2].duration_s == doctest::Approx(2636.669e-6).scale(0));
  // Streams: the broadcast and the all-reduce share stream 40, the gemm runs on stream 7.
  CHECK(nat.ops[2].deps == std::vector<std::uint64_t>{0});
  CHECK(nat.ops[1].deps.empty());
}

TEST_CASE("kineto benchmark trace: 4 kernels linked to their launches by ac2g flows") {
  const auto t = load("benchmark_simple_add_trace.json.gz");
  CHECK(t.events == 111);
  CHECK(t.count("kernel") == 4);
  CHECK(t.nccl_kernels() == 0);
  CHECK(t.cpu_ops == 28);
  CHECK(t.annotations == 8);
  CHECK(t.launches.size() == 15);  // cuda_runtime events
  // ac2g ids 22, 39, 53, 72 have both an "s" and an "f"; the other "f"s sit on runtime calls.
  CHECK(t.flow_pairs == 4);
  CHECK(t.linked_by_flow == 4);
  for (const auto& op : t.gpu_ops) {
    REQUIRE(op.launch.has_value());
    CHECK(t.launches[*op.launch].name == "cudaLaunchKernel");
  }
  const auto nat = to_native(t, {});
  CHECK(nat.ops.size() == 4);
  double total = 0;
  for (const auto& op : nat.ops) total += *op.duration_s;
  CHECK(total == doctest::Approx((5 + 5 + 3 + 3) * 1e-6).scale(0));
}

TEST_CASE("kineto sampled rank: older kernel-name form, sizes from nccl: annotations") {
  const auto t = load("sampled_rank-0.json.gz");
  CHECK(t.events == 4855);
  CHECK(t.count("kernel") == 1154);
  CHECK(t.nccl_kernels() == 10);  // all ncclKernel_SendRecv
  CHECK(t.count("gpu_memcpy") == 40);
  CHECK(t.count("gpu_memset") == 10);
  CHECK(t.cpu_ops == 2329);
  CHECK(t.flow_pairs == 0);  // no ac2g flows: links by correlation id
  CHECK(t.linked_by_correlation == 1204);
  CHECK(t.world_size == 128);
  const auto info = trace_info(fixture("kineto/sampled_rank-0.json.gz"));
  // The SendRecv kernels run what the enclosing nccl:* annotation says.
  const auto& c = info.collectives;
  CHECK(c.at("all_to_all").at(419430400) == 2);   // 419430400 x unsigned char
  CHECK(c.at("all_to_all").at(384 * 8) == 1);      // 384 x long
  CHECK(c.at("all_to_all").at(2846720 * 4) == 1);  // 2846720 x int
  CHECK(c.at("all_reduce").at(19618307ull * 4) == 1);
  CHECK(c.at("all_reduce").at(26258430ull * 4) == 1);
  CHECK(c.at("all_reduce").at(5716654ull * 4) == 1);
  CHECK(c.at("all_reduce").at(26955536ull * 4) == 1);
  // _all_gather_base gives only its input (16 MiB int8) and no group size: S unknown.
  CHECK(c.at("all_gather").at(0) == 2);
  // Non-NCCL GPU time (kernels, memcpy, memset), summed independently: 211645 us.
  CHECK(info.compute_time_s == doctest::Approx(0.211645).scale(0));
}

TEST_CASE("kineto errors name the JSON pointer") {
  CHECK(error_of([] { decode_kineto(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": -5}]})", "k.json"); }) ==
        "k.json/traceEvents/0/dur: negative duration -5 us; expected a duration >= 0");
  CHECK(error_of([] { decode_kineto(R"({"traceEvents": [{"ph": "X", "ts": 1}]})", "k.json"); }) ==
        "k.json/traceEvents/0: \"X\" event without \"dur\"; expected ts and dur on complete events");
  CHECK(error_of([] { decode_kineto(R"({"traceEvents": [{"ts": 1}]})", "k.json"); }) ==
        "k.json/traceEvents/0: event without a \"ph\" string; expected a Chrome trace event");
  CHECK(error_of([] { decode_kineto(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
                          "args": {"Collective name": "allreduce", "In msg nelems": 4, "dtype": "Quux"}}]})", "d.json"); }) ==
        "d.json/traceEvents/0/args/dtype: unknown dtype 'Quux'; expected a PyTorch dtype (Float, Half, BFloat16, ...)");
  CHECK(error_of([] { decode_kineto(R"({"events": []})", "n.json"); }) ==
        "n.json: no \"traceEvents\" array; expected a Chrome trace (Kineto / PyTorch profiler JSON)");
}

TEST_CASE("NCCL kernel names, both generations") {
  CHECK(comm_kind_from_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == CommKind::all_reduce);
  CHECK(comm_kind_from_nccl_kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == CommKind::reduce_scatter);
  CHECK(comm_kind_from_nccl_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == CommKind::send_recv);
  CHECK_FALSE(comm_kind_from_nccl_kernel("void cutlass::Kernel<x>").has_value());
  CHECK(comm_kind_from_pytorch("nccl:_all_gather_base") == CommKind::all_gather);
  CHECK(comm_kind_from_pytorch("reduce_scatter_tensor_coalesced") == CommKind::reduce_scatter);
  CHECK(comm_kind_from_pytorch("alltoall_base") == CommKind::all_to_all);
}
