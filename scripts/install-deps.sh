#!/usr/bin/env bash
# Installs gtadoc's build and test dependencies from Debian 12 packages (run as root).
# Idempotent; used by scripts/quickstart.sh, scripts/test.sh and CI.
# Daemons in these packages (munge, slurmctld, slurmd, prometheus) are not started by the
# installation: the tests start their own (tests/slurm/cluster.sh).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
PKGS=(
  g++ cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools libssl-dev libdeflate-dev
  libboost-dev libboost-system-dev
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  gzip zstd xz-utils time
  # Test helpers written in Python (standard library only).
  python3
  # Slurm test (tests/slurm, tests/cli/slurm_test.sh): one-node cluster; srun --mpi=pmix loads
  # libpmix.so from libpmix-dev.
  slurm-wlm munge libpmix-dev
  # Service tests: HTTP clients (curl, ab), `promtool check metrics` (prometheus), and the
  # libFuzzer target (clang++ -fsanitize=fuzzer: libFuzzer is in libclang-rt-14-dev).
  curl apache2-utils prometheus clang libclang-rt-14-dev
  # Simulated cluster (tests/cluster/sim): network namespaces and veth pairs (ip), ps.
  iproute2 procps util-linux
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  # Keep the packages' maintainer scripts from starting their services (policy-rc.d, 101 =
  # "action forbidden"), unless the machine already has a policy of its own.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\n# gtadoc install-deps.sh: no service starts while installing\nexit 101\n' |
      $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "dependencies installed"
