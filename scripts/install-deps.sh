#!/usr/bin/env bash
# Installs gtadoc's build and test dependencies from Debian 12 packages (run as root).
# Idempotent; used by scripts/quickstart.sh, scripts/test.sh and CI.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
PKGS=(
  g++ cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools
  libboost-dev libboost-system-dev
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  gzip zstd xz-utils time
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "dependencies installed"
