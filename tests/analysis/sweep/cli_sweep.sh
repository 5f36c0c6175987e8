#!/usr/bin/env bash
# CLI tests of `shardsim sweep` and `shardsim plot` (issue 4), run by CTest:
#   cli_sweep.sh MODE SHARDSIM DATA_DIR WORK_DIR
# MODE mpi:    mpirun -np 2 and -np 4 give the single-process file byte for byte (skips with
#              exit 77 when mpirun is absent).
# MODE resume: SIGKILL and SIGTERM mid-run, then --resume, give the uninterrupted file.
# MODE cli:    exit codes and messages of bad input; plot draws an SVG from a sweep's CSV.
set -u
mode=$1 shardsim=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
same() { cmp -s "$1" "$2" || { diff <(head -c 2000 "$1") <(head -c 2000 "$2") | head; fail "$1 and $2 differ"; }; }
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

case $mode in
mpi)
  command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (install openmpi-bin)"; exit 77; }
  root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  "$shardsim" sweep "$data/collective_grid.json" --out single.csv --jobs 2 || fail "single-process sweep"
  [ "$(lines single.csv)" = 241 ] || fail "single.csv has $(lines single.csv) lines, expected 241 (header + 240)"
  for np in 2 4; do
    mpirun "${root[@]}" --oversubscribe -np $np "$shardsim" sweep "$data/collective_grid.json" --out mpi$np.csv --jobs 1 \
      || fail "mpirun -np $np"
    same single.csv mpi$np.csv
    mpirun "${root[@]}" --oversubscribe -np $np "$shardsim" sweep "$data/collective_grid.json" --out mpi$np.jsonl --jobs 1 \
      || fail "mpirun -np $np jsonl"
  done
  "$shardsim" sweep "$data/collective_grid.json" --out single.jsonl --jobs 2 || fail "single-process jsonl"
  same single.jsonl mpi2.jsonl
  same single.jsonl mpi4.jsonl
  # Resume under MPI: keep the first 100 lines, then 4 ranks complete the file.
  head -n 100 single.csv > part.csv
  mpirun "${root[@]}" --oversubscribe -np 4 "$shardsim" sweep "$data/collective_grid.json" --out part.csv --resume --jobs 1 \
    || fail "mpirun --resume"
  same single.csv part.csv
  echo "mpi: -np 2 and -np 4 byte-identical to one process (csv, jsonl, resume)"
  ;;
resume)
  "$shardsim" sweep "$data/collective_flow.json" --out whole.csv --jobs 2 --no-progress || fail "whole run"
  total=$(lines whole.csv)
  for sig in KILL TERM; do
    rm -f cut.csv
    "$shardsim" sweep "$data/collective_flow.json" --out cut.csv --jobs 2 --no-progress 2> err.txt &
    pid=$!
    for _ in $(seq 1 6000); do [ "$(lines cut.csv)" -ge 11 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done
    kill -$sig $pid
    wait $pid; rc=$?
    at=$(lines cut.csv)
    [ "$at" -lt "$total" ] || fail "SIG$sig came after the sweep finished ($at lines): make the sweep longer"
    if [ $sig = TERM ]; then
      [ $rc = 130 ] || fail "SIGTERM: exit $rc, expected 130"
      grep -q "rerun with --resume" err.txt || fail "SIGTERM: no resume hint"
      [ -z "$(tail -c 1 cut.csv)" ] || fail "SIGTERM left a partial line"
    fi
    "$shardsim" sweep "$data/collective_flow.json" --out cut.csv --jobs 2 --resume --no-progress || fail "resume after SIG$sig"
    same whole.csv cut.csv
    echo "SIG$sig at $at of $total lines, --resume: identical"
  done
  ;;
cli)
  out=$("$shardsim" sweep "$data/bad_wrong_type.json" --out bad.csv 2>&1); rc=$?
  [ $rc = 2 ] || fail "bad sweep file: exit $rc, expected 2"
  want="shardsim: error: $data/bad_wrong_type.json: /axes/0/values/1: integer 2048 for /bytes; expected a string, as the base value at /bytes"
  [ "$out" = "$want" ] || fail "bad sweep file message: '$out'"
  [ ! -s bad.csv ] || fail "a bad sweep file wrote rows"
  out=$("$shardsim" sweep "$data/collective_grid.json" --out r.txt 2>&1); rc=$?
  [ $rc = 2 ] && [ "$out" = "shardsim: error: --out: 'r.txt'; expected a file ending in .csv or .jsonl" ] || fail "--out r.txt: $rc '$out'"
  "$shardsim" sweep "$data/collective_grid.json" --out grid.csv --no-progress 2> summary.txt || fail "grid sweep"
  grep -q "^sweep: 240 scenarios (0 resumed, 240 run: 180 ok, 0 does-not-fit, 60 invalid, 0 error)" summary.txt \
    || fail "summary: $(cat summary.txt)"
  "$shardsim" plot grid.csv --x /topology/bw --y busbw_GBps --by algorithm -o fig.svg || fail "plot svg"
  grep -q "<svg" fig.svg || fail "fig.svg is not an SVG"
  "$shardsim" plot grid.csv --x size_bytes --y time_s --by algorithm --logx --logy -o fig.png || fail "plot png"
  [ "$(head -c 4 fig.png | tail -c 3)" = PNG ] || fail "fig.png is not a PNG"
  out=$("$shardsim" plot grid.csv --x bw --y time_s -o f.svg 2>&1); rc=$?
  [ $rc = 2 ] || fail "missing column: exit $rc"
  case $out in "shardsim: error: --x: no column 'bw' in grid.csv; expected one of the columns: scenario, hash, status, reason, /algorithm, /topology/bw, /bytes, "*) ;;
    *) fail "missing column message: '$out'" ;; esac
  echo "cli: errors exit 2 with their messages; plots drawn"
  ;;
*) fail "unknown mode $mode" ;;
esac
