#!/usr/bin/env bash
# One command for a fresh Debian 12 machine: installs dependencies, builds, compresses the
# bundled sample corpus and runs a query on it in single-node mode (no MPI launcher).
# About 10 minutes on 2 cores, nearly all of it the build; each step says what it does.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "=== quickstart: $*" >&2; }
step "1/4 installing the Debian packages gtadoc needs (scripts/install-deps.sh; a minute or two, seconds when already installed)"
scripts/install-deps.sh
step "2/4 building gtadoc into ${BUILD_DIR:-build}/ (scripts/build.sh; 5-15 minutes on 2 cores the first time, seconds after)"
scripts/build.sh
BIN=${BUILD_DIR:-build}/gtadoc
OUT=${OUT_DIR:-build/quickstart}
mkdir -p "$OUT"
step "3/4 compressing the sample corpus data/sample into $OUT/sample.gtd (a few seconds)"
"$BIN" compress data/sample -o "$OUT/sample.gtd" --force
"$BIN" info "$OUT/sample.gtd"
step "4/4 running word-count on the archive (under a second)"
echo "--- top 20 words (lowercased, punctuation trimmed):"
"$BIN" run "$OUT/sample.gtd" word-count --top 20 --lowercase --alnum
step "done: the binary is $BIN; put it on PATH (export PATH=\$PWD/${BUILD_DIR:-build}:\$PATH) or see README.md, \"Install\""
