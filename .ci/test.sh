#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
export CCACHE_BASEDIR="$PWD"  # cache hits across clones in other folders
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
