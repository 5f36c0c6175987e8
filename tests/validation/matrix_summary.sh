#!/usr/bin/env bash
# Pools the emulated matrix's cells per (collective, algorithm) pair: reads the output of
#   ctest --test-dir build -L matrix -V > matrix.log
# (the CELL lines of tests/validation/test_emulated.cpp; a repeat's figure replaces the first)
# and prints, per pair (OpenMPI's own choice pooled per collective, whatever it picked), the cells within 5 %, and the median |error| over its cells (issue 14's
# criterion: median |error| <= 5 % at S >= 1 MiB), then the totals.
# Usage: tests/validation/matrix_summary.sh matrix.log
set -euo pipefail
log=${1:?usage: matrix_summary.sh CTEST_LOG}
[[ -r $log ]] || { echo "matrix_summary.sh: cannot read '$log'" >&2; exit 2; }
grep -o 'CELL .*' "$log" | awk '
{
  pair = $3 " " $4
  if ($4 ~ /^ompi-decision:/) pair = $3 " (OpenMPI decision)"
  err = $7
  for (i = 8; i <= NF; ++i) if ($i == "repeat") { err = $(i + 1); break }
  sub(/%,?$/, "", err)
  n[pair]++; v[pair, n[pair]] = err + 0
  cells++; if (err + 0 <= 5) within++
}
END {
  if (cells == 0) { print "matrix_summary.sh: no CELL lines" > "/dev/stderr"; exit 2 }
  for (p in n) {
    k = n[p]
    for (i = 1; i <= k; ++i) a[i] = v[p, i]
    for (i = 2; i <= k; ++i) { x = a[i]; j = i - 1; while (j >= 1 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
    med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    w = 0; for (i = 1; i <= k; ++i) if (a[i] <= 5) w++
    printf "%-40s cells %2d, within 5 %% %2d, median |error| %5.1f %% -> %s\n", p, k, w, med, med <= 5 ? "meets" : "ABOVE" | "sort"
    pairs++; if (med <= 5) pairs_ok++
  }
  close("sort")
  printf "%d of %d cells within 5 %%; %d of %d pairs with median |error| <= 5 %%\n", within, cells, pairs_ok, pairs
}'
