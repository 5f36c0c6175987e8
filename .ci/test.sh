#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1  # cache hits across clones in other folders (no build-dir hash in -g entries)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build -j2
# Every test but the emulated accuracy matrix (label matrix: 22 OpenMPI pairs on emulated
# clusters at 4-8 hosts and two rates, 12-16 min; its bounds are not yet stable run to run,
# docs/measurements.md): `ctest --test-dir build -L matrix` runs it.
ctest --test-dir build --output-on-failure -j2 -LE matrix
