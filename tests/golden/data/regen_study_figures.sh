#!/usr/bin/env bash
# Regenerates the reference figure data of tests/golden/test_study_figures.cpp from
# `shardsim study --quick`. Run only when a change of the figures' numbers is intended, and
# say why in the commit. Usage: tests/golden/data/regen_study_figures.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$build/shardsim" study --quick --out "$tmp" > /dev/null
for f in speedup.csv breakdown.csv memory.csv; do
  cp "$tmp/$f" "$root/tests/golden/data/study-quick/$f"
done
echo "updated tests/golden/data/study-quick/{speedup,breakdown,memory}.csv"
