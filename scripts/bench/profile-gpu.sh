#!/usr/bin/env bash
# Profiles the GPU engine's resident queries with Nsight Systems when it is installed (GPU
# machine, after a build of gtadoc_query_bench): kernel and CUDA API summaries go to
# $OUT/profile-<task>.txt. Usage: scripts/bench/profile-gpu.sh ARCHIVE [TASKS]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-./device-out}
BUILD_DIR=${BUILD_DIR:-build-device}
ARCHIVE=$1
TASKS=${2:-word-count,inverted-index,sequence-count,ranked-inverted-index}
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -z "$NSYS" ]; then
  echo "nsys not found: no profile"
  exit 0
fi
for t in ${TASKS//,/ }; do
  "$NSYS" profile -o "/tmp/prof-$t" --force-overwrite true \
    "$BUILD_DIR/scripts/bench/gtadoc_query_bench" "$ARCHIVE" --engines gpu --tasks "$t" --reps 3 \
    >/dev/null 2>&1
  "$NSYS" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum --format table \
    "/tmp/prof-$t.nsys-rep" >"$OUT/profile-$t.txt" 2>&1
done
