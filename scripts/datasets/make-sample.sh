#!/usr/bin/env bash
# make-sample.sh — regenerate the bundled sample corpus data/sample/ from the
# python-doc corpus of the fetch cache (Debian package python3.11-doc, the
# reST sources of the Python 3.11 documentation; PSF License Version 2).
#
#   scripts/datasets/make-sample.sh [--dir CACHE] [--out DIR] [--check]
#
#   --dir CACHE  fetch cache (default: $GTADOC_DATA or
#                $HOME/.cache/gtadoc/datasets); the python-doc corpus is
#                fetched there with fetch.sh when it is missing
#   --out DIR    where to write the sample (default: data/sample in the repo);
#                the folder is replaced
#   --check      do not write: build into a temporary folder and compare it
#                with --out (exit 1 when they differ)
#
# Selection (deterministic, byte order): every top-level document; the
# folders distributing, extending, faq, howto, includes, install, installing,
# reference, tutorial, using and whatsnew in full; from library/ and c-api/
# the documents whose names start with a, b or c. Files are copied unchanged.
# Prints the file count, the bytes and a digest of the tree (sha256 over the
# sorted "sha256  path" lines), which data/SAMPLE-NOTICE.md records.
set -euo pipefail
export LC_ALL=C

# The package version the committed sample was made from.
EXPECTED_VERSION="3.11.2-6+deb12u9"

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CACHE="${GTADOC_DATA:-$HOME/.cache/gtadoc/datasets}"
OUT="$repo/data/sample"
CHECK=0

while [ $# -gt 0 ]; do
    case "$1" in
        --dir)   CACHE="$2"; shift 2 ;;
        --out)   OUT="$2"; shift 2 ;;
        --check) CHECK=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "make-sample.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

"$here/fetch.sh" --dir "$CACHE" python-doc >/dev/null
src="$CACHE/python-doc"
version="$(sed -n 's/^version=//p' "$CACHE/python-doc.complete")"
if [ "$version" != "$EXPECTED_VERSION" ]; then
    echo "make-sample.sh: warning: cache holds python3.11-doc $version, the committed" \
         "sample was made from $EXPECTED_VERSION; the result may differ (update" \
         "data/SAMPLE-NOTICE.md and EXPECTED_VERSION if you commit it)" >&2
fi

select_files() {
    (
        cd "$src"
        find . -maxdepth 1 -type f -name '*.txt'
        find distributing extending faq howto includes install installing \
             reference tutorial using whatsnew -type f -name '*.txt'
        find library c-api -maxdepth 1 -type f -name '[abc]*.txt'
    ) | sed 's|^\./||' | sort
}

digest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }

tmp="$(mktemp -d)"
trap 'rm -rf -- "$tmp"' EXIT
mkdir "$tmp/sample"
select_files | (cd "$src" && xargs -d '\n' cp --parents -t "$tmp/sample" --)
find "$tmp/sample" -type f -exec chmod 644 {} +
find "$tmp/sample" -type d -exec chmod 755 {} +

files="$(find "$tmp/sample" -type f | wc -l | tr -d ' ')"
bytes="$(find "$tmp/sample" -type f -printf '%s\n' | awk '{s += $1} END {printf "%d", s}')"
dirs="$(find "$tmp/sample" -mindepth 1 -type d | wc -l | tr -d ' ')"
sum="$(digest "$tmp/sample")"

if [ "$CHECK" -eq 1 ]; then
    if [ -d "$OUT" ] && [ "$(digest "$OUT")" = "$sum" ]; then
        echo "sample up to date: $OUT ($files files, $bytes bytes, digest $sum)"
        exit 0
    fi
    echo "sample differs from a fresh build: $OUT (fresh: $files files, $bytes bytes, digest $sum)" >&2
    exit 1
fi

rm -rf -- "$OUT"
mkdir -p "$(dirname "$OUT")"
cp -R -- "$tmp/sample" "$OUT"
echo "wrote $OUT: $files files in $dirs folders, $bytes bytes, python3.11-doc $version"
echo "digest: $sum"
