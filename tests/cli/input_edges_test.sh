#!/usr/bin/env bash
# Input edges are announced and the symlink policy holds (docs/FORMAT.md "Inputs"): inside an
# input directory a symlink to a regular file (inside or outside the tree) is a document named by
# the link's path; a symlink to a directory is not descended; FIFOs, sockets, devices, dangling
# symlinks and symlink loops are skipped: one warning line counts them, -v lists each.
# Usage: input_edges_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p D/sub outside
printf 'alpha beta\n' > D/a.txt
printf 'gamma\n' > D/sub/b.txt
printf 'outside words\n' > outside/o.txt
ln -s ../outside/o.txt D/link-out.txt       # followed: a document
ln -s sub/b.txt D/link-in.txt               # followed: a document
ln -s ../outside D/dirlink                  # a directory: not descended
ln -s missing.txt D/dangling.txt            # skipped
ln -s loop D/loop                           # skipped (ELOOP)
mkfifo D/fifo                               # skipped (never opened: no hang)
skipped=4
if command -v python3 >/dev/null; then
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' D/sock
  skipped=$((skipped + 1))
fi
if [[ $(id -u) -eq 0 ]] && mknod D/null c 1 3 2>/dev/null; then skipped=$((skipped + 1)); fi

timeout 60 "$BIN" compress D -o a.gtd 2>err || fail "compress failed: $(cat err)"
[[ $(wc -l <err) -eq 1 ]] || fail "want one notice line, got: $(cat err)"
grep -q "skipped $skipped entries" err || fail "notice does not count $skipped: $(cat err)"
for what in FIFO "dangling symlink" "symlink loop" "symlink to a directory"; do
  grep -q "$what" err || fail "notice does not mention '$what': $(cat err)"
done
[[ $(wc -c <err) -lt 200 ]] || fail "notice longer than 200 characters: $(cat err)"

timeout 60 "$BIN" compress D -o v.gtd -v 2>err || fail "compress -v failed: $(cat err)"
for entry in D/fifo D/dangling.txt D/loop D/dirlink; do
  grep -q "skipped $entry: " err || fail "-v does not list $entry: $(cat err)"
done
[[ $skipped -lt 5 ]] || grep -q "skipped D/sock: socket" err || fail "-v does not list the socket"

# The documents: the regular files and the links to regular files, under the links' names.
"$BIN" decompress a.gtd -o back
got=$(cd back && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
[[ $got == "a.txt link-in.txt link-out.txt sub/b.txt " ]] || fail "documents: $got"
cmp back/link-out.txt outside/o.txt || fail "link-out.txt does not hold the target's bytes"
# A corpus with nothing but skipped entries is empty.
mkdir E && mkfifo E/fifo
rc=0
"$BIN" compress E -o e.gtd 2>err || rc=$?
[[ $rc -ne 0 ]] && grep -q "empty corpus" err || fail "only a FIFO: exit $rc: $(cat err)"
echo "input_edges_test: ok"
