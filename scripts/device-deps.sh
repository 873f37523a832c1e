#!/usr/bin/env bash
# Libraries gtadoc uses when installed that the GPU machine's image lacks (it has no network, and
# nothing can be installed there): libdeflate, which inflates the archive's chunks 2-3x faster
# than zlib. Run here, on a machine with apt and network access (Debian or Ubuntu, amd64):
#
#   scripts/device-deps.sh            # downloads the .deb packages into .deps/ (git-ignored)
#
# then carry .deps to the GPU machine with the working tree; scripts/device-check.sh (and
# `scripts/device-deps.sh unpack DIR` for a build of your own) unpacks them into a private
# prefix, never into /, and points CMake at it with CMAKE_PREFIX_PATH. The build then links
# libdeflate by its path there (the binaries carry that path as their run path).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(libdeflate-dev libdeflate0)
if [ "${1:-}" = unpack ]; then
  dest=${2:?usage: scripts/device-deps.sh unpack DIR}
  mkdir -p "$dest"
  shopt -s nullglob
  debs=(.deps/*.deb)
  [ ${#debs[@]} -gt 0 ] || { echo "no .deps/*.deb: run scripts/device-deps.sh where apt has network" >&2; exit 1; }
  for f in "${debs[@]}"; do dpkg -x "$f" "$dest"; done
  echo "$(cd "$dest" && pwd)/usr"
  exit 0
fi
mkdir -p .deps
arch=$(dpkg --print-architecture)
(cd .deps && apt-get download -oAPT::Architecture="$arch" "${PACKAGES[@]}")
ls -l .deps
