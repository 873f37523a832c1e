#!/usr/bin/env bash
# One command for the GPU machine (Ubuntu 24.04, nvcc 13, CMake, ninja, Open MPI, HDF5, NCCL,
# GTest; no network): configures for sm_90 (H100/H200), builds with every core, runs the worker
# tests and the GPU engine tests through ctest, then compute-sanitizer (memcheck, racecheck,
# initcheck) on a small GPU test. Every log goes under $OUT (default ./device-out) with a
# summary.txt; the exit status is non-zero when any step failed or a GPU test was skipped.
#
#   scripts/device-check.sh                # build in ./build-device
#   OUT=/tmp/o BUILD_DIR=build-x JOBS=8 scripts/device-check.sh
#   BENCH=0 scripts/device-check.sh               # tests only, no benchmarks
#   E2E=0 scripts/device-check.sh                 # resident-query benchmark only (no gtadoc run)
#   QUERY=0 scripts/device-check.sh               # no resident-query benchmark
#   SANITIZE=0 scripts/device-check.sh            # skip compute-sanitizer
#   RAW=0 scripts/device-check.sh                 # skip the raw-text GPU baseline's tests
#   SERVE=0 scripts/device-check.sh               # no service latency benchmark
#   WRITE=0 scripts/device-check.sh               # no write benchmark (WRITE_MIB: its size, 2048)
#   UPLOAD=0 scripts/device-check.sh              # no upload benchmark (host arrays to the GPU)
#   PACK=0 scripts/device-check.sh                # logs stay loose (default: $OUT/logs.tar.gz)
#   SCALE=1 scripts/device-check.sh               # also the scale benchmark (default off), into
#                                                 # $OUT/scale; SCALE_ENV: its knobs, e.g.
#                                                 # "SIZES=1G,4G BUDGET=300 TASKS=word-count+--top+100"
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD_DIR=${BUILD_DIR:-build-device}
JOBS=${JOBS:-$(nproc)}
SUMMARY=$OUT/summary.txt
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The GPU engine tests, listed explicitly (tests/worker/gpu_engine_test.cpp).
GPU_TESTS=(
  RandomDags
  DeepChainOf200NestedRules
  OneHugeRuleOf100kSymbols
  EveryUploadWayLoadsTheSameShard
  ManyTinyRules
  NgramsSpanningManyRules
  TinyDocumentsAndNLongerThanDocuments
  AllIdenticalDocuments
  EmptyAndDegenerateShards
  BodyLengthsAtWorkloadClassBoundaries
  LevelWidthsAtWarpAndBlockBoundaries
  ManyDocumentsSharingADeepDag
  SmallMixedClasses
  StatsSelectorAndForcedTraversal
  RejectsBadN
  DefaultNormalizationAndRepeatedQueries
  SeveralShardsAndShardOutlivingEngine
  LoadLanesSideBySideAsOneByOne
  CachedPreparationsAcrossNormalizationsAndN
  OutOfMemoryFallsBackOrFailsCleanly
)
# The batched pass over several shards (tests/worker/gpu_batch_test.cpp).
GPU_BATCH_TESTS=(
  EveryTaskTraversalAndNormalization
  LongNgramsAndDocumentsOutOfIdOrder
  SetsChangingBetweenCallsAndDegenerateBatches
  OutOfMemoryFallsBackToSmallerBatches
)
# The bodies of frame-checked grammars checked on the device (tests/worker/gpu_checks_test.cpp).
GPU_CHECK_TESTS=(
  AValidGrammarLoadsAndAnswersAsTheCpuEngine
  EveryBodyMutationIsRejectedWithTheHostsMessage
  TheLoadLanesRejectABadShardAndLoadTheOthers
)
# Small GPU cases for the sanitizers (they slow kernels down by orders of magnitude).
SANITIZER_FILTER='GpuEngineTest.SmallMixedClasses'

failed=0
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME COMMAND...: runs COMMAND with output in $OUT/NAME.log, records status and time.
step() {
  local name=$1
  shift
  local start end rc
  start=$(date +%s)
  "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  end=$(date +%s)
  if [ "$rc" -eq 0 ]; then
    note "PASS  $name ($((end - start)) s)"
  else
    note "FAIL  $name (exit $rc, $((end - start)) s, see $name.log)"
    failed=1
  fi
  return "$rc"
}

# The device gets a copy of the working tree whose .git may be stale, so the sources are named by
# a fingerprint of their contents too (scripts/source-fingerprint.sh gives the same one locally).
note "gtadoc device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), sources $("$ROOT/scripts/source-fingerprint.sh")"

step environment bash -c 'nvidia-smi; nvcc --version; cmake --version; ninja --version; \
  (command -v compute-sanitizer && compute-sanitizer --version) || echo "no compute-sanitizer"'

# Libraries the image lacks, carried as .deb packages in .deps/ (scripts/device-deps.sh):
# unpacked into the build directory and found there by CMake.
if compgen -G "$ROOT/.deps/*.deb" >/dev/null; then
  prefix=$("$ROOT/scripts/device-deps.sh" unpack "$BUILD_DIR/deps")
  export CMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  note "libraries from .deps: $(cd "$ROOT/.deps" && echo *.deb)"
fi

GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
# The CUDA20 options help CMake versions that do not know nvcc's C++20 flag yet (harmless else).
if ! step configure cmake -S "$ROOT" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGTADOC_BUILD_BENCH="${GTADOC_BUILD_BENCH:-ON}" \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
  -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20; then
  note "configure failed: nothing else to do"
  exit 1
fi
note "$(grep -o "archive chunks: .*" "$OUT/configure.log" || echo "archive chunks: ?")"
if ! grep -q "CUDA=ON" "$OUT/configure.log"; then
  note "FAIL  CMake did not enable CUDA (see configure.log)"
  failed=1
fi

if ! step build cmake --build "$BUILD_DIR" -j "$JOBS" --target worker_tests gtadoc; then
  note "build failed: nothing else to do"
  exit 1
fi

WORKER_BIN=$BUILD_DIR/tests/worker_tests

# Every suite of the worker test binary (CPU engine, query, GPU engine;
# the raw-text references have their own binaries, tests/reference/).
suites=$("$WORKER_BIN" --gtest_list_tests 2>/dev/null | grep -E '^[A-Za-z_]' | tr -d '.' |
  paste -sd'|' - || true)
if [ -z "$suites" ]; then
  note "FAIL  could not list the worker test suites"
  failed=1
else
  step ctest-worker ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 1800 \
    -j "$JOBS" -R "^($suites)\\."
fi

gpu_regex="^(GpuEngineTest\\.($(IFS='|'; echo "${GPU_TESTS[*]}"))|GpuBatchTest\\.($(IFS='|'; echo "${GPU_BATCH_TESTS[*]}"))|GpuBodyChecks\\.($(IFS='|'; echo "${GPU_CHECK_TESTS[*]}")))\$"
gpu_total=$((${#GPU_TESTS[@]} + ${#GPU_BATCH_TESTS[@]} + ${#GPU_CHECK_TESTS[@]}))
step ctest-gpu ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 1800 -j 1 \
  -R "$gpu_regex"
ran=$(grep -cE 'Test +#[0-9]+: Gpu(EngineTest|BatchTest|BodyChecks)\.' "$OUT/ctest-gpu.log" || true)
skipped=$(grep -cE 'Gpu(EngineTest|BatchTest|BodyChecks)\..*Skipped' "$OUT/ctest-gpu.log" || true)
note "      GPU tests run: ${ran:-0} of ${gpu_total}, skipped: ${skipped:-0}"
if [ "${ran:-0}" -ne "${gpu_total}" ] || [ "${skipped:-0}" -ne 0 ]; then
  note "FAIL  GPU tests missing or skipped (is a GPU visible?)"
  failed=1
fi

# Records kept on the GPU: partition, ranks and samples on the device against the
# host path (tests/cluster/device_partition_test.cpp); must run, not skip.
if step build-cluster-tests cmake --build "$BUILD_DIR" -j "$JOBS" --target cluster_tests; then
  step device-partition "$BUILD_DIR/tests/cluster_tests" --gtest_filter='DevicePartitionTest.*'
  if grep -q 'SKIPPED' "$OUT/device-partition.log"; then
    note "FAIL  DevicePartitionTest skipped (is a GPU visible?)"
    failed=1
  fi
fi

# The whole pipeline on the GPU: gtadoc run (1, 2 and 4 ranks as the GPUs allow; one GPU also
# with its memory capped, loads in rounds) and gtadoc serve against the raw-text reference, every
# task.
if cmake --build "$BUILD_DIR" -j "$JOBS" --target gtadoc_reference >"$OUT/reference-build.log" 2>&1; then
  step gpu-pipeline "$ROOT/scripts/gpu-pipeline-check.sh" "$BUILD_DIR"
  # Point queries on the GPU engine's service: the search indexes' path, the traversal's and the
  # service's choice against the raw-text reference (the CPU engine's run is in ctest).
  step gpu-point bash "$ROOT/tests/serve/point_test.sh" "$BUILD_DIR/gtadoc" "$ROOT" \
    "$BUILD_DIR/point-scratch" "$BUILD_DIR/tests/gtadoc_reference" gpu
fi

# The GPU test binary alone, with gtest's own report (XML kept for the record).
step gpu-gtest "$WORKER_BIN" --gtest_filter='GpuEngineTest.*:GpuBatchTest.*:GpuBodyChecks.*:BatchPlan.*' \
  --gtest_output="xml:$OUT/gpu-gtest.xml"

# The raw-text GPU baseline (tests/reference/gpu/) against the CPU reference, on the device.
if [ "${RAW:-1}" = 0 ]; then
  note "SKIP  raw-gpu-tests (RAW=0)"
elif cmake --build "$BUILD_DIR" -j "$JOBS" --target raw_gpu_tests >"$OUT/raw-gpu-build.log" 2>&1; then
  # SmallCorporaAllVariants (every task x option x format, over 300 s) runs with RAW_GPU_ALL=1.
  filter='-RawGpu.SmallCorporaAllVariants'
  [ "${RAW_GPU_ALL:-0}" = 1 ] && filter='*'
  step raw-gpu-tests timeout 600 "$BUILD_DIR/tests/reference/raw_gpu_tests" --gtest_filter="$filter"
else
  note "FAIL  raw_gpu_tests did not build (see raw-gpu-build.log)"
  failed=1
fi

if [ "${SANITIZE:-1}" = 0 ]; then
  note "SKIP  compute-sanitizer (SANITIZE=0)"
elif command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck initcheck; do
    extra=()
    [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    step "sanitizer-$tool" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      --print-limit 50 "$WORKER_BIN" --gtest_filter="$SANITIZER_FILTER"
  done
else
  note "FAIL  compute-sanitizer not found"
  failed=1
fi

# Benchmarks (BENCH=0 skips): every task x engine on the corpora carried in .device-data/, or
# on the bundled sample; tables land in $OUT/bench-*.{md,json}.
if [ "${BENCH:-1}" != 0 ]; then
  if step bench-build cmake --build "$BUILD_DIR" -j "$JOBS" --target gtadoc_reference \
    raw_wordcount raw_gpu gtadoc_query_bench gtadoc_serve_load gtadoc_gen gtadoc_write_bench \
    gtadoc_upload_bench; then
    # How host arrays of a shard's size reach the GPU from one thread and from four (a load
    # lane's uploads: staged, double-buffered, pageable, registered, pinned; docs/PERFORMANCE.md,
    # "Scale"). UPLOAD=0 skips it.
    if [ "${UPLOAD:-1}" != 0 ]; then
      step upload-bench bash -c 'for t in 1 4; do for mib in 4 10; do
          "$1" "$mib" "$t" || exit 1; done; done' upload-bench \
        "$BUILD_DIR/scripts/bench/gtadoc_upload_bench"
    fi
    # How fast one file fills from several threads here (pwrite against a mapping, on the build
    # directory's file system and on /dev/shm): the write phase's ceiling (docs/PERFORMANCE.md,
    # "End to end"). WRITE=0 skips it.
    if [ "${WRITE:-1}" != 0 ]; then
      step write-bench bash -c 'for d in "$1" /dev/shm; do for s in "pwrite 1" "pwrite 8" \
        "map 4" "map 8" "map 16" "map-fallocate 4" "map-fallocate 8" "map-fallocate 16"; do
          set -- "$1" "$2" $s; [ "$3" = map-fallocate ] && [ "$d" = /dev/shm ] && continue
          out=$("$2" "$d/gtadoc-write-bench" "${WRITE_MIB:-2048}" "$4" "$3") || exit 1
          echo "$d: $out"
        done; done' write-bench "$BUILD_DIR" "$BUILD_DIR/scripts/bench/gtadoc_write_bench"
    fi
    # Resident queries (G-TADOC's methodology): every engine, speed-ups, bandwidth floor.
    if [ "${QUERY:-1}" != 0 ]; then
      step query-bench env OUT="$OUT" BUILD_DIR="$BUILD_DIR" REPS="${REPS:-5}" \
        "$ROOT/scripts/bench/query-bench.sh"
      grep -q '"match": *false' "$OUT/query-bench.jsonl" &&
        note "FAIL  a GPU engine result differs from the CPU engine's" && failed=1
    fi
    # End to end: every task x {gpu, 2 GPUs, cpu, auto} through `gtadoc run`, phases from
    # --stats, outputs compared with each other and (small corpora) the raw-text reference.
    # E2E=0 skips it; E2E_ENV passes knobs (e.g. "BUDGET_S=200 LARGE_MB=300").
    if [ "${E2E:-1}" != 0 ]; then
      # shellcheck disable=SC2086
      step e2e env OUT="$OUT" BUILD_DIR="$BUILD_DIR" REPS="${REPS:-1}" ${E2E_ENV:-} \
        "$ROOT/scripts/bench/e2e-bench.sh"
    fi
    # The resident service: latency per task uncached / cached / 64 clients on the
    # e2e `large` archive (built through e2e-bench.sh when missing), 1 GPU, 2 GPUs, CPU.
    # SERVE=0 skips it; SERVE_ENV passes knobs (e.g. "CONFIGS=gpu").
    if [ "${SERVE:-1}" != 0 ]; then
      # shellcheck disable=SC2086
      step serve-bench env OUT="$OUT" BUILD_DIR="$BUILD_DIR" ${SERVE_ENV:-} \
        "$ROOT/scripts/bench/serve-bench.sh"
    fi
    # Scaling over the host's GPUs: weak and strong, end to end and resident,
    # every multi-GPU output compared with one GPU's. Runs with 2 or more GPUs; SCALING=0 skips
    # it; SCALING_ENV passes knobs (e.g. "PER_GPU=256M SERVE=0").
    if [ "${SCALING:-1}" != 0 ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
      # shellcheck disable=SC2086
      step scaling env OUT="$OUT/scaling" BUILD_DIR="$BUILD_DIR" ${SCALING_ENV:-} \
        "$ROOT/scripts/bench/scaling-bench.sh"
      cp "$OUT/scaling/scaling.md" "$OUT/scaling.md" 2>/dev/null
    fi
    # How the costs grow with corpus size (scripts/bench/scale-bench.sh): real text and
    # synthetic corpora of SIZES, compression, the floor, every task end to end, resident
    # queries, raw-text baselines. SCALE=1 runs it (default off: with its BUDGET of 540 s it
    # fills a 10-minute command on its own, so turn the other steps off or lower BUDGET);
    # SCALE_ENV passes knobs (no spaces: lists by commas, a task's words joined by +).
    if [ "${SCALE:-0}" = 1 ]; then
      # shellcheck disable=SC2086
      step scale env OUT="$OUT/scale" BUILD_DIR="$BUILD_DIR" ${SCALE_ENV:-} \
        "$ROOT/scripts/bench/scale-bench.sh"
      cp "$OUT/scale/scale.md" "$OUT/scale.md" 2>/dev/null
      cp "$OUT/scale/scale.png" "$OUT/scale.png" 2>/dev/null
    fi
    # The older engines-and-reference benchmark (scripts/bench/device-bench.sh): ENGINES=1.
    if [ "${ENGINES:-0}" != 0 ]; then
      step bench env OUT="$OUT" BUILD_DIR="$BUILD_DIR" REPS="${REPS:-2}" \
        "$ROOT/scripts/bench/device-bench.sh"
      grep -q "match=False" "$OUT/bench.log" && note "FAIL  a benchmark output differs from the reference" && failed=1
    fi
  fi
fi

if [ "$failed" -eq 0 ]; then
  note "RESULT: all device checks passed"
else
  note "RESULT: some device checks FAILED"
fi
# The device tool brings back only a few files: everything but the summary, the Markdown tables
# and the figures goes into one archive, logs.tar.gz (PACK=0 keeps them loose).
if [ "${PACK:-1}" != 0 ]; then
  (cd "$OUT" && find . -maxdepth 1 -type f ! -name summary.txt ! -name '*.md' ! -name '*.png' \
    ! -name logs.tar.gz -printf '%f\n' |
    tar -czf logs.tar.gz -T - --remove-files)
fi
exit "$failed"
