#!/usr/bin/env bash
# Prints a short fingerprint of the source tree's contents (every file under the code and
# script folders, in name order), to tell which sources a device run used: the device gets a
# copy of the working tree whose .git may not match. Same output locally and on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
find CMakeLists.txt common formats coordinator worker cluster tests scripts -type f \
  ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -c1-12
