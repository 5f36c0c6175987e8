#!/usr/bin/env bash
# Installs everything shardsim needs from Debian 12 packages (idempotent; run as root).
set -euo pipefail
PKGS=(cmake ninja-build g++ ccache pkg-config
      libboost-graph-dev nlohmann-json3-dev libfmt-dev libeigen3-dev doctest-dev libcli11-dev
      libopenmpi-dev openmpi-bin libprotobuf-dev protobuf-compiler zlib1g-dev
      clang libclang-rt-14-dev gnuplot-nox iproute2 procps)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
