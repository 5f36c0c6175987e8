#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS: builds every libFuzzer target (clang, ASan + UBSan) in
# build-fuzz/ and runs each for SECONDS seconds from the seed corpus (the fixtures in
# ../shared/fixtures and tests/fuzz/corpus/), then prints executions and crashes per target.
# Exit status: 0 when no target crashed, 1 otherwise. Crash inputs land in build-fuzz/crashes/.
set -euo pipefail
seconds=${1:?usage: tests/fuzz/run.sh SECONDS}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SHARDSIM_FUZZ_BUILD:-$root/build-fuzz}
fixtures=${SHARDSIM_FIXTURES_DIR:-$root/../shared/fixtures}
jobs=${SHARDSIM_FUZZ_JOBS:-2}
targets=(fuzz_chakra fuzz_kineto fuzz_astra fuzz_topology_json fuzz_sweep_json)

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" -j "$jobs" "${targets[@]}"

seed() {  # target -> seed files
  case $1 in
    fuzz_chakra) ls "$fixtures"/chakra_et/*/*.et "$fixtures"/chakra_json/*.json ;;
    fuzz_kineto) ls "$fixtures"/kineto/nccl_allreduce_excerpt.json "$fixtures"/kineto/benchmark_simple_add_trace.json.gz ;;
    fuzz_astra) ls "$fixtures"/astra_sim_v1/workload_*.txt ;;
    fuzz_topology_json) ls "$fixtures"/astra_sim_v1/*.json "$root"/topologies/presets/*.json 2>/dev/null || true ;;
    fuzz_sweep_json) ls "$root"/examples/sweeps/*.json 2>/dev/null || true ;;
  esac
  ls "$root"/tests/fuzz/corpus/"${1#fuzz_}"/* 2>/dev/null || true
}

status=0
mkdir -p "$build/crashes"
printf '%-20s %12s %8s\n' target executions crashes
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  for f in $(seed "$t"); do cp -f "$f" "$corpus/" 2>/dev/null || true; done
  log="$build/$t.log"
  set +e
  "$build/fuzz/$t" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  crashes=$(ls "$build/crashes" | grep -c "^$t-" || true)
  printf '%-20s %12s %8s\n' "$t" "${runs:-0}" "$crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    grep -m3 -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | sed 's/^/    /' || true
  fi
done
exit $status
