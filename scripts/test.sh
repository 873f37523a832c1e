#!/usr/bin/env bash
# One command for a fresh Debian 12 machine: installs dependencies, builds, runs every test
# (unit tests, CLI tests, MPI tests with 1..4 ranks). GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" --timeout 900
