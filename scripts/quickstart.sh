#!/usr/bin/env bash
# One command for a fresh Debian 12 machine: installs dependencies, builds, compresses the
# bundled sample corpus and runs a query on it in single-node mode (no MPI launcher).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BIN=${BUILD_DIR:-build}/gtadoc
OUT=${OUT_DIR:-build/quickstart}
mkdir -p "$OUT"
"$BIN" compress data/sample -o "$OUT/sample.gtd" --force
"$BIN" info "$OUT/sample.gtd"
echo "--- top 20 words (lowercased, punctuation trimmed):"
"$BIN" run "$OUT/sample.gtd" word-count --top 20 --lowercase --alnum
