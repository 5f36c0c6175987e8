#!/usr/bin/env bash
# Rewrites tests/golden/expected/*.out from the current build (after an intended change of
# output). Usage: tests/golden/regen.sh [build-dir]; then review `git diff tests/golden/expected`.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/../.."
cmake --build "$build" --target shardsim test_golden_files
SHARDSIM_REGEN_GOLDEN=1 "$build/tests/golden/test_golden_files"
git status --short tests/golden/expected
