#!/usr/bin/env bash
# Layering check (DESIGN 1, issue 12): every #include "x/..." of the library sources
# (sim, topologies, models, traces, analysis) goes to the same layer or one above it in
# DESIGN 1's order, and the include graph between parts (a folder two levels deep, such as
# models/memory, or a layer's top folder for the files right in it) has no cycle.
# Usage: check_layers.sh REPO_ROOT. Exit 0: clean; 1: violations, each printed.
set -euo pipefail
cd "$1"
edges=$(mktemp)
trap 'rm -f "$edges" "$edges.err"' EXIT
# "file:#include "path"" lines -> edges "from to"; upward includes reported on stderr-like lines.
grep -rH --include='*.hpp' --include='*.cpp' -E '^#include "(sim|topologies|models|traces|analysis)/' \
    sim topologies models traces analysis |
  awk -F'"' -v out="$edges" '
    function part(p,   n, a) { n = split(p, a, "/"); return n >= 3 ? a[1] "/" a[2] : a[1] }
    function rank(p) {
      if (p ~ /^sim\/text\//) return 0   # the base library, below sim
      if (p ~ /^sim\//) return 1
      if (p ~ /^topologies\//) return 2
      if (p ~ /^models\//) return 3
      if (p ~ /^traces\//) return 4
      return 5                           # analysis
    }
    {
      file = $1; sub(/:.*/, "", file); inc = $2
      from = part(file); to = part(inc)
      if (from == to) next
      if (rank(inc) > rank(file)) { print "layer: " file " includes " inc " (a layer below it in DESIGN 1)"; bad = 1 }
      print from " " to > out
    }
    END { exit bad }' || { status=1; }
status=${status:-0}
if ! sort -u "$edges" | tsort > /dev/null 2> "$edges.err"; then
  echo "cycle between parts (tsort):"
  cat "$edges.err"
  status=1
fi
[ "$status" = 0 ] && echo "layers: $(sort -u "$edges" | wc -l) include edges between parts, no cycle, none upward"
exit "$status"
