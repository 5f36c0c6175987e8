#!/usr/bin/env bash
# The README's main command: install what is missing, build, run the main job on built-in
# defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
export CCACHE_BASEDIR="$PWD"  # cache hits across clones in other folders
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build -j2
./build/shardsim
