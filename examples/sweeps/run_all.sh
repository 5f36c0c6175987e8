#!/usr/bin/env bash
# Runs every example sweep of this folder and draws its plots:
#   examples/sweeps/run_all.sh BUILD_DIR OUT_DIR
# BUILD_DIR holds the shardsim executable; OUT_DIR receives <example>.csv and its figures.
# A CI smoke test (CTest label smoke). Exits 77 (skipped) when an example's command is not
# registered in this build, 1 on any other failure.
set -u
build=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
shardsim=$build/shardsim
mkdir -p "$out"
skipped=0

# sweep NAME: runs NAME.json into OUT_DIR/NAME.csv (returns 2 when its command is missing).
sweep() {
  local name=$1 err
  err=$("$shardsim" sweep "$here/$name.json" --out "$out/$name.csv" --no-progress 2>&1) && { echo "$err"; return 0; }
  if grep -q "/base/command: unknown command" <<< "$err"; then
    echo "SKIP $name: $err"
    skipped=1
    return 2
  fi
  echo "FAIL $name: $err"
  exit 1
}
# plot NAME FIG ARGS...: draws OUT_DIR/FIG from OUT_DIR/NAME.csv.
plot() {
  local name=$1 fig=$2
  shift 2
  "$shardsim" plot "$out/$name.csv" -o "$out/$fig" "$@" || { echo "FAIL plot $fig"; exit 1; }
  [ -s "$out/$fig" ] || { echo "FAIL: $fig is empty"; exit 1; }
  echo "  plot $out/$fig"
}

if sweep allreduce_algorithms; then
  plot allreduce_algorithms allreduce_algorithms_busbw.svg --x link_bw_GBps --y busbw_GBps --by series --logx \
    --title "all-reduce of 256 MiB over 64 ranks: bus bandwidth vs link bandwidth"
  plot allreduce_algorithms allreduce_algorithms_time.svg --x link_bw_GBps --y time_s --by series --logx --logy \
    --title "all-reduce of 256 MiB over 64 ranks: time vs link bandwidth"
fi
if sweep replicated_vs_sharded_tpu_v3; then
  plot replicated_vs_sharded_tpu_v3 replicated_vs_sharded_step.svg --x chips --y step_time_s --by strategy --logx \
    --title "step time vs data-parallel size, TPU v3 torus"
fi
if sweep zero_stages_dgx_h100; then
  plot zero_stages_dgx_h100 zero_stages_time.svg --x gpus --y step_time_s --by strategy --logx \
    --title "ZeRO stages on DGX H100: step time"
  plot zero_stages_dgx_h100 zero_stages_memory.svg --x gpus --y memory_bytes.peak --by strategy --logx --logy \
    --status ok,does-not-fit --title "ZeRO stages on DGX H100: peak memory per GPU"
fi
[ $skipped = 0 ] || { echo "some examples were skipped (their command is not in this build)"; exit 77; }
echo "all examples ran"
