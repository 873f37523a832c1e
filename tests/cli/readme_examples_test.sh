#!/usr/bin/env bash
# Every command of README.md's "## Commands" block runs as written, in a scratch directory, with
# `gtadoc` on PATH and data/sample copied in; each must exit 0 (the serve block runs as one
# script: the service in the background, curl until ready, queries, `kill %1`, and the service
# must then exit 0).
# Skipped, and why: `sbatch ...` (needs a Slurm cluster: tests/cli/slurm_test.sh), the quick
# start scripts (they install packages and build) and scripts/datasets/fetch.sh (network);
# `mpirun ...` only when mpirun is not installed; `--gpus` examples on a machine with fewer than
# two GPUs (CI: tests/cli/in_process_ranks_test.sh runs the same ranks on the CPU engine).
# Substituted: the service's port 8080 becomes a free port, so that concurrent tests do not
# collide; `mpirun -np N` runs 2 ranks (--oversubscribe); `big/`, `more.txt` and `corpus.gtd`
# (placeholders for a user's corpus) are made from the sample.
# Usage: readme_examples_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/bin" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
ln -s "$BIN" bin/gtadoc
export PATH="$WORK/bin:$PATH"
mkdir data && cp -r "$SRC/data/sample" data/sample
mkdir big && cp -r "$SRC/data/sample/library" big/library
cp "$SRC/data/sample/library/os.rst.txt" more.txt 2>/dev/null || printf 'more text\n' > more.txt

# The block between "## Commands" and the next heading, its ```sh fence only.
awk '/^## Commands/{on=1; next} on && /^## /{exit} on && /^```/{f=!f; next} on && f' \
  "$SRC/README.md" > commands.sh
[[ $(grep -c '^gtadoc ' commands.sh) -ge 10 ]] || fail "README's command block not found"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
       2>/dev/null || echo $((20000 + RANDOM % 20000)))
ran=0 skipped=0
serve_block=""
while IFS= read -r line; do
  cmd=${line%%  #*}                       # an example's trailing comment
  cmd=${cmd%"${cmd##*[![:space:]]}"}      # trailing blanks
  [[ -z $cmd || $cmd == \#* ]] && continue
  case $cmd in
    sbatch\ *) skipped=$((skipped + 1)); echo "skipped (Slurm): $cmd"; continue ;;
    *--gpus\ *)  # several GPUs of one machine (refused, exit 3, where fewer are visible)
      gpus=0
      [[ -d /proc/driver/nvidia/gpus ]] && gpus=$(ls /proc/driver/nvidia/gpus | wc -l)
      if [[ $gpus -lt 2 ]]; then
        skipped=$((skipped + 1)); echo "skipped (fewer than 2 GPUs): $cmd"; continue
      fi ;;
    mpirun\ *)
      if ! command -v mpirun >/dev/null; then
        skipped=$((skipped + 1)); echo "skipped (no mpirun): $cmd"; continue
      fi
      cmd=$(sed -E 's/^mpirun -np [0-9]+/mpirun --oversubscribe -np 2/' <<<"$cmd") ;;
  esac
  if [[ $cmd == "gtadoc serve "* || -n $serve_block ]]; then  # the service block, run together
    serve_block+="${cmd//8080/$port}"$'\n'
    continue
  fi
  [[ $cmd == *corpus.gtd* && ! -e corpus.gtd ]] && ln -s sample.gtd corpus.gtd
  echo "+ $cmd"
  rc=0
  timeout 300 bash -c "$cmd" </dev/null >"out.$ran" 2>"err.$ran" || rc=$?
  [[ $rc -eq 0 ]] || fail "README example exited $rc: $cmd: $(head -c 300 "err.$ran")"
  ran=$((ran + 1))
done < commands.sh

[[ -n $serve_block ]] || fail "README's service example not found"
echo "+ (service block)"
{
  echo 'set -euo pipefail'
  echo 'trap '"'"'kill %1 2>/dev/null || true'"'"' ERR'
  printf '%s' "$serve_block"
  echo 'wait %1  # the service exit status'
} > serve.sh
timeout 120 bash serve.sh >serve.out 2>serve.err || fail "service block: $(tail -c 400 serve.err)"
grep -q 'gtadoc_' serve.out || fail "the service block printed no metrics: $(tail -c 300 serve.out)"

# What the examples made.
[[ -f sample.gtd/manifest.h5 && -f big.gtd/manifest.h5 && -f gpu.gtd/manifest.h5 ]] ||
  fail "archives missing"
diff -r data/sample restored >/dev/null || fail "restored/ differs from data/sample"
[[ -f one/library/allos.rst.txt ]] || fail "one/ lacks library/allos.rst.txt"
[[ -s vocabulary.tsv && -s index.json && -s ranked.tsv ]] || fail "run outputs missing"
if command -v mpirun >/dev/null; then
  [[ -s counts.tsv && -f sorted/_SUCCESS ]] || fail "the mpirun examples' outputs are missing"
fi
echo "readme_examples_test: ok ($ran commands and the service block ran; $skipped skipped)"
