#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [TARGET...]: runs each libFuzzer target (clang, ASan + UBSan) for
# SECONDS seconds from its seed corpus (the fixtures in tests/data/fixtures, the examples and
# tests/fuzz/corpus/<target without fuzz_>/), then prints executions and crashes per target.
# Without TARGETs, all of them.
#
# Build tree: $SHARDSIM_FUZZ_BUILD (default build-fuzz/). When it is already configured (CI
# passes its sanitizer tree, configured with -DSHARDSIM_FUZZ=ON) it is only brought up to
# date; otherwise it is configured standalone (cmake -S tests/fuzz, RelWithDebInfo).
# A crash, a sanitizer report, a leak, an input running over 10 s (-timeout) or a process over
# 2 GiB (-rss_limit_mb) fails the target; its input lands in <build>/crashes/.
# Exit status: 0 when no target failed, 1 otherwise.
set -euo pipefail
seconds=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SHARDSIM_FUZZ_BUILD:-$root/build-fuzz}
fixtures=${SHARDSIM_FIXTURES_DIR:-$root/tests/data/fixtures}
jobs=${SHARDSIM_FUZZ_JOBS:-2}
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(fuzz_chakra fuzz_chakra_json fuzz_kineto fuzz_astra fuzz_topology_json fuzz_sweep_json
           fuzz_trace_json fuzz_logs)
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null

seed() {  # target -> seed files
  case $1 in
    fuzz_chakra) ls "$fixtures"/chakra_et/*/*.et ;;
    fuzz_chakra_json) ls "$fixtures"/chakra_json/*.json ;;
    fuzz_kineto) ls "$fixtures"/kineto/nccl_allreduce_excerpt.json "$fixtures"/kineto/benchmark_simple_add_trace.json.gz ;;
    fuzz_astra) ls "$fixtures"/astra_sim_v1/workload_*.txt ;;
    fuzz_sweep_json) ls "$root"/examples/sweeps/*.json ;;
    fuzz_logs) ls "$fixtures"/nccl_tests/*.txt ;;
  esac
  ls "$root"/tests/fuzz/corpus/"${1#fuzz_}"/* 2>/dev/null || true
}

status=0
mkdir -p "$build/crashes"
printf '%-20s %8s %12s %8s %8s\n' target seconds executions exec/s crashes
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  for f in $(seed "$t"); do
    cp -f "$f" "$corpus/"
    # Mutating deflate bytes rarely gives valid gzip: seed the inflated text as well.
    case $f in *.gz) gzip -dc "$f" >"$corpus/$(basename "${f%.gz}")" ;; esac
  done
  rm -f "$build/crashes/$t-"*
  log="$build/$t.log"
  set +e
  "$build/fuzz/$t" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  crashes=$(find "$build/crashes" -name "$t-*" | wc -l)
  printf '%-20s %8s %12s %8s %8s\n' "$t" "$seconds" "${runs:-0}" "${rate:-0}" "$crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    grep -m5 -E 'ERROR|SUMMARY|Test unit written' "$log" | sed 's/^/    /' || true
  fi
done
exit $status
