#!/usr/bin/env bash
# The prefetches of the hot loops that depend on them are in the built code. GCC drops a call to a
# function whose only effect is a prefetch as dead code, so a prefetch helper that is not inlined
# silently disappears (the renderer's and Sequitur's once did); the helpers are always-inline.
# Usage: prefetch_test.sh OBJDUMP CLUSTER_LIBRARY COORDINATOR_LIBRARY
set -euo pipefail
OBJDUMP=$1 CLUSTER=$2 COORDINATOR=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
# prefetches LIBRARY PATTERN: how many prefetch instructions the functions whose demangled names
# match PATTERN hold.
prefetches() {
  "$OBJDUMP" -d --no-show-raw-insn -C "$1" |
    awk -v pat="$2" '/^[0-9a-f]+ <.*>:$/ { inside = ($0 ~ pat) } inside && /prefetch/ { n++ }
                     END { print n + 0 }'
}
n=$(prefetches "$CLUSTER" 'RowRenderer::render_blocks')
[[ $n -gt 0 ]] || fail "no prefetch in RowRenderer::render_blocks (cluster/rows/render.cpp)"
m=$(prefetches "$CLUSTER" 'RowRenderer::RowRenderer')
[[ $m -gt 0 ]] || fail "no prefetch in RowRenderer's measuring pass (cluster/rows/render.cpp)"
s=$(prefetches "$COORDINATOR" 'SequiturBuilder|gtadoc::sequitur\(')
[[ $s -gt 0 ]] || fail "no prefetch in Sequitur (coordinator/sequitur.cpp)"
echo "prefetches in the built code: render_blocks $n, measuring pass $m, Sequitur $s"
