#!/usr/bin/env bash
# fetch.sh — fetch real text corpora from Debian packages into a cache folder.
#
#   scripts/datasets/fetch.sh [options] NAME...
#   scripts/datasets/fetch.sh --list
#
# Each corpus becomes a directory of documents (one regular file per
# document, nothing else in it), ready for `gtadoc compress DIR -o X.gtd`:
#
#   $GTADOC_DATA/<name>/            the documents
#   $GTADOC_DATA/<name>.complete    marker, written last (package, version,
#                                   parameters, file count, bytes)
#
# GTADOC_DATA defaults to $HOME/.cache/gtadoc/datasets. The marker lives
# beside the corpus, not inside it, because gtadoc treats every regular file
# below an input directory (dot-files included) as a document.
#
# Packages are never installed: `apt-get download` fetches the .deb into a
# temporary folder, `dpkg-deb -x` unpacks it there, and the text files are
# copied out. Needs apt-get, apt-cache, dpkg-deb, tar, xz, gzip, GNU grep,
# awk, find, sort, flock. Run `apt-get update` first on a fresh machine.
#
# Options:
#   --dir DIR           cache folder (default: $GTADOC_DATA or
#                       $HOME/.cache/gtadoc/datasets)
#   --linux-mb N        size budget of the linux corpus in MB (10^6 bytes);
#                       0 = the selected trees in full (default 300)
#   --linux-trees LIST  top-level kernel trees, in priority order, comma or
#                       space separated (default "Documentation,drivers")
#   --force             rebuild even when the corpus is already complete
#   --keep-tmp          keep the temporary folder (debugging)
#   --list              list the corpora and their state, then exit
#   -h, --help          this text
#
# Environment: GTADOC_DATA (cache folder), GTADOC_PKG_<NAME> (override the
# Debian package of a corpus, NAME upper-cased with '-' as '_', e.g.
# GTADOC_PKG_PYTHON_DOC=python3.12-doc).
#
# Corpora (see scripts/datasets/README.md for what exactly each contains):
#   gcide        dict-gcide        GNU Collaborative International Dictionary
#                                  of English, split into 27 documents (front
#                                  matter + one per letter); GPL-2+
#   linux        linux-source-6.1  Linux kernel sources, Documentation/ and
#                                  drivers/ (size selectable); GPL-2
#   python-doc   python3.11-doc    Python docs reST sources (_sources); PSF-2
#   openjdk-doc  openjdk-17-doc    Java SE 17 API docs, HTML; GPL-2 w/ CPE
set -euo pipefail

export LC_ALL=C

CORPORA=(gcide linux python-doc openjdk-doc)

corpus_packages() { # candidate Debian packages, first one available wins;
    # the first is the Debian 12 package the corpus is defined by, the
    # others are for other releases (a warning says when one is used)
    case "$1" in
        gcide)       echo "dict-gcide" ;;
        linux)       echo "linux-source-6.1 linux-source-6.12 linux-source-6.6" ;;
        python-doc)  echo "python3.11-doc python3.12-doc python3.13-doc" ;;
        openjdk-doc) echo "openjdk-17-doc openjdk-21-doc" ;;
        *) return 1 ;;
    esac
}

corpus_title() {
    case "$1" in
        gcide)       echo "GCIDE dictionary, one document per letter" ;;
        linux)       echo "Linux kernel sources (Documentation/, drivers/ subset)" ;;
        python-doc)  echo "Python documentation, reST sources" ;;
        openjdk-doc) echo "Java SE 17 API documentation, HTML" ;;
    esac
}

die()  { echo "fetch.sh: error: $*" >&2; exit 1; }
note() { echo "fetch.sh: $*" >&2; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

DATA_DIR="${GTADOC_DATA:-$HOME/.cache/gtadoc/datasets}"
LINUX_MB=300
LINUX_TREES="Documentation,drivers"
FORCE=0
KEEP_TMP=0
LIST=0
NAMES=()

while [ $# -gt 0 ]; do
    case "$1" in
        --dir)          [ $# -ge 2 ] || die "--dir needs a value"; DATA_DIR="$2"; shift 2 ;;
        --dir=*)        DATA_DIR="${1#*=}"; shift ;;
        --linux-mb)     [ $# -ge 2 ] || die "--linux-mb needs a value"; LINUX_MB="$2"; shift 2 ;;
        --linux-mb=*)   LINUX_MB="${1#*=}"; shift ;;
        --linux-trees)  [ $# -ge 2 ] || die "--linux-trees needs a value"; LINUX_TREES="$2"; shift 2 ;;
        --linux-trees=*) LINUX_TREES="${1#*=}"; shift ;;
        --force)        FORCE=1; shift ;;
        --keep-tmp)     KEEP_TMP=1; shift ;;
        --list)         LIST=1; shift ;;
        -h|--help)      usage; exit 0 ;;
        --)             shift; NAMES+=("$@"); break ;;
        -*)             die "unknown option '$1' (see --help)" ;;
        *)              NAMES+=("$1"); shift ;;
    esac
done

[[ "$LINUX_MB" =~ ^[0-9]+$ ]] || die "--linux-mb must be a whole number of MB"
LINUX_TREES="$(echo "$LINUX_TREES" | tr ',' ' ' | xargs)"
[ -n "$LINUX_TREES" ] || die "--linux-trees is empty"
for t in $LINUX_TREES; do
    [[ "$t" =~ ^[A-Za-z0-9._-]+$ ]] || die "bad kernel tree name '$t'"
done

# ---------------------------------------------------------------- helpers

marker_get() { # marker key -> value
    sed -n "s/^$2=//p" "$1" | head -n 1
}

corpus_params() { # the parameters that change the content of a corpus
    case "$1" in
        linux) echo "linux_mb=$LINUX_MB linux_trees=$LINUX_TREES" ;;
        *)     echo "-" ;;
    esac
}

count_files() { find "$1" -type f | wc -l | tr -d ' '; }
count_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%d\n", s}'; }

human() { awk -v b="$1" 'BEGIN {
    if (b >= 1e9) printf "%.2f GB", b / 1e9;
    else if (b >= 1e6) printf "%.1f MB", b / 1e6;
    else if (b >= 1e3) printf "%.1f kB", b / 1e3;
    else printf "%d B", b }'; }

pick_package() { # corpus -> "package version", from apt's candidate
    local name="$1" var cands p ver
    var="GTADOC_PKG_$(echo "$name" | tr 'a-z-' 'A-Z_')"
    cands="${!var:-$(corpus_packages "$name")}"
    for p in $cands; do
        ver="$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: *//p' | head -n 1)"
        if [ -n "$ver" ] && [ "$ver" != "(none)" ]; then
            [ "$p" = "${cands%% *}" ] || note "warning: $name: ${cands%% *} is not available here, using $p"
            echo "$p $ver"
            return 0
        fi
    done
    die "none of the packages '$cands' for corpus '$name' is known to apt here (run 'apt-get update'; or set $var)"
}

# Delete every file below DIR that is not text-like: a file is text-like
# when it holds no NUL byte. Removes directories left empty.
keep_text_only() {
    local dir="$1" list removed
    list="$(mktemp)"
    { find "$dir" -type f -print0 | xargs -0 -r grep -lZaP '\x00' -- || true; } > "$list"
    removed="$(tr -cd '\0' < "$list" | wc -c)"
    xargs -0 -r rm -f -- < "$list"
    rm -f -- "$list"
    find "$dir" ! -type f ! -type d -delete        # links, fifos: not documents
    find "$dir" -mindepth 1 -type d -empty -delete
    [ "$removed" -eq 0 ] || note "  dropped $removed binary file(s)"
}

# Replace every FILE.gz below DIR by its decompressed FILE.
gunzip_all() {
    local dir="$1" f
    while IFS= read -r -d '' f; do
        if [ -e "${f%.gz}" ]; then
            rm -f -- "$f"                   # both forms shipped: keep the plain one
        else
            gzip -dc -- "$f" > "${f%.gz}" && rm -f -- "$f"
        fi
    done < <(find "$dir" -type f -name '*.gz' -print0)
}

# ---------------------------------------------------------------- corpora
# Each builder gets: the unpacked package root, the output folder (empty).

build_gcide() {
    local root="$1" out="$2" dz dict
    dz="$(find "$root" -type f -name 'gcide.dict.dz' | head -n 1)"
    [ -n "$dz" ] || die "gcide.dict.dz not found in the package"
    dict="$root/gcide.dict"
    gzip -dc -- "$dz" > "$dict"           # dictzip is gzip-compatible
    # The dictionary is in alphabetical order; each letter starts with the
    # entry of the letter itself ("B \B\ ..." at the start of a line after a
    # blank line). Front matter (database headers, licence notice, entries
    # of digits) goes to 00-front.txt. Concatenating the documents in name
    # order gives gcide.dict back byte for byte (checked below).
    awk -v out="$out" '
        BEGIN { cur = "00-front"; f = out "/" cur ".txt"; prev = "" }
        prev == "" && $0 ~ /^[A-Z] \\[A-Z]\\/ {
            c = substr($0, 1, 1)
            if (substr($0, 4, 1) == c && (cur == "00-front" || c > cur)) {
                close(f); cur = c; f = out "/" cur ".txt"
            }
        }
        { print > f; prev = $0 }
    ' "$dict"
    if [ -n "$(tail -c 1 -- "$dict")" ]; then   # no final newline: awk added one
        local last; last="$(ls -- "$out"/*.txt | tail -n 1)"
        truncate -s -1 -- "$last"
    fi
    if ! cat "$out"/*.txt | cmp -s - "$dict"; then
        die "gcide split does not reproduce gcide.dict"
    fi
    local n; n="$(count_files "$out")"
    [ "$n" -eq 27 ] || note "  warning: gcide split into $n documents (expected 27)"
}

build_python_doc() {
    local root="$1" out="$2" src
    src="$(find "$root/usr/share/doc" -type d -path '*/html/_sources' | sort | head -n 1)"
    [ -n "$src" ] || die "html/_sources not found in the package"
    cp -R -- "$src/." "$out/"
    gunzip_all "$out"
    # keep the reST sources (*.txt) only
    find "$out" -type f ! -name '*.txt' -delete
}

build_openjdk_doc() {
    local root="$1" out="$2" base
    # openjdk-N-doc ships the docs under openjdk-N-jre-headless/ (the
    # openjdk-N-doc/ folder holds symlinks to it); take the real folder.
    base="$(find "$root/usr/share/doc" -type f -path '*/api/index.html' ! -path '*/api/*/*' \
            | sort | head -n 1)"
    [ -n "$base" ] || die "api/index.html not found in the package"
    base="$(dirname "$(dirname "$base")")"
    cp -R -- "$base/." "$out/"
    gunzip_all "$out"
    find "$out" -type f ! -name '*.html' -delete      # HTML pages only
}

build_linux() {
    local root="$1" out="$2" tarball top src list t
    tarball="$(find "$root/usr/src" -maxdepth 1 -type f -name 'linux-source-*.tar.xz' | sort | head -n 1)"
    [ -n "$tarball" ] || die "linux-source-*.tar.xz not found in the package"
    top="$({ tar -tJf "$tarball" 2>/dev/null || true; } | head -n 1 | cut -d/ -f1)"
    [ -n "$top" ] || die "cannot read $tarball"
    src="$root/src"
    mkdir -p "$src"
    local members=()
    for t in $LINUX_TREES; do members+=("$top/$t"); done
    note "  extracting ${members[*]} from $(basename "$tarball")"
    tar -xJf "$tarball" -C "$src" --no-same-owner "${members[@]}" \
        || die "tar failed (is every tree in '$LINUX_TREES' in the kernel?)"
    keep_text_only "$src/$top"

    # Selection: trees in priority order; a tree is taken whole while it
    # fits the budget; the first one that does not fit is sampled: its files
    # in order of a hash of their path, each taken when it still fits; the
    # trees after it are left out. --linux-mb 0 takes everything.
    list="$root/linux-files.tsv"
    local i=0
    for t in $LINUX_TREES; do
        i=$((i + 1))
        (cd "$src/$top" && find "$t" -type f -printf "$i\t%s\t%p\n") || true
    done > "$list"
    awk -F '\t' -v budget="$((LINUX_MB * 1000000))" '
        BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
        function h(s,   i, x) {
            x = 0
            for (i = 1; i <= length(s); i++) x = (x * 131 + ord[substr(s, i, 1)]) % 4294967291
            return x
        }
        { tree[NR] = $1; size[NR] = $2; path[NR] = $3; tot[$1] += $2; if ($1 > nt) nt = $1 }
        END {
            used = 0; cut = 0
            for (t = 1; t <= nt; t++) {
                if (budget == 0 || used + tot[t] <= budget) { take[t] = 1; used += tot[t] }
                else { cut = t; break }
            }
            for (n = 1; n <= NR; n++) {
                if (take[tree[n]]) print "keep\t" path[n]
                else if (tree[n] == cut) printf "cand\t%d\t%d\t%s\n", h(path[n]), size[n], path[n]
            }
            printf "used\t%d\n", used
        }' "$list" > "$list.plan"
    local used
    used="$(awk -F '\t' '$1 == "used" {print $2}' "$list.plan")"
    {
        awk -F '\t' '$1 == "keep" {print $2}' "$list.plan"
        awk -F '\t' '$1 == "cand" {print $2 "\t" $3 "\t" $4}' "$list.plan" \
            | sort -t "$(printf '\t')" -k1,1n -k3,3 \
            | awk -F '\t' -v used="$used" -v budget="$((LINUX_MB * 1000000))" \
                '{ if (used + $2 <= budget) { used += $2; print $3 } }'
    } | sort > "$list.keep"
    # copy the kept files out, keeping their paths
    (cd "$src/$top" && xargs -d '\n' -r cp --parents -t "$out" --) < "$list.keep"
}

# ---------------------------------------------------------------- driver

list_corpora() {
    local n m files size ver pkg
    printf '%-12s %-17s %7s %10s  %-24s %s\n' NAME PACKAGE FILES SIZE VERSION CONTENT
    for n in "${CORPORA[@]}"; do
        m="$DATA_DIR/$n.complete"
        if [ -f "$m" ] && [ -d "$DATA_DIR/$n" ]; then
            files="$(marker_get "$m" files)"; size="$(human "$(marker_get "$m" bytes)")"
            ver="$(marker_get "$m" version)"; pkg="$(marker_get "$m" package)"
        else
            files="-"; size="absent"; ver="-"; pkg="$(corpus_packages "$n" | cut -d' ' -f1)"
        fi
        printf '%-12s %-17s %7s %10s  %-24s %s\n' "$n" "$pkg" "$files" "$size" \
            "$ver" "$(corpus_title "$n")"
    done
    echo "cache folder: $DATA_DIR"
}

fetch_one() {
    local name="$1" dest="$DATA_DIR/$1" marker="$DATA_DIR/$1.complete"
    local params pv pkg ver tmp dl deb
    params="$(corpus_params "$name")"

    if [ "$FORCE" -eq 0 ] && [ -f "$marker" ] && [ -d "$dest" ]; then
        if [ "$(marker_get "$marker" params)" = "$params" ]; then
            note "$name: already complete in $dest (skipped; --force rebuilds)"
            return 0
        fi
        note "$name: parameters changed ($(marker_get "$marker" params) -> $params), rebuilding"
    fi

    pv="$(pick_package "$name")"
    pkg="${pv%% *}"; ver="${pv#* }"
    note "$name: package $pkg $ver"

    tmp="$(mktemp -d "$DATA_DIR/.tmp-$name.XXXXXX")"
    mkdir -p "$tmp/root" "$tmp/out"
    # The .deb goes to a folder of its own under $TMPDIR: as root, apt drops
    # privileges to _apt, which must be able to reach and write that folder.
    dl="$(mktemp -d "${TMPDIR:-/tmp}/gtadoc-fetch-$name.XXXXXX")"
    # shellcheck disable=SC2064
    trap "rm -rf -- '$dl'; [ '$KEEP_TMP' -eq 1 ] || rm -rf -- '$tmp'" EXIT
    if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
        chmod 755 "$dl"; chown _apt "$dl"
    fi
    (cd "$dl" && apt-get download -q "$pkg=$ver") >&2 || die "apt-get download $pkg=$ver failed"
    deb="$(find "$dl" -maxdepth 1 -name '*.deb' | head -n 1)"
    [ -n "$deb" ] || die "apt-get download produced no .deb"
    dpkg-deb -x "$deb" "$tmp/root"
    rm -rf -- "$dl"

    case "$name" in
        gcide)       build_gcide "$tmp/root" "$tmp/out" ;;
        linux)       build_linux "$tmp/root" "$tmp/out" ;;
        python-doc)  build_python_doc "$tmp/root" "$tmp/out" ;;
        openjdk-doc) build_openjdk_doc "$tmp/root" "$tmp/out" ;;
    esac
    keep_text_only "$tmp/out"
    find "$tmp/out" -type f -exec chmod 644 {} +
    find "$tmp/out" -type d -exec chmod 755 {} +

    local files bytes
    files="$(count_files "$tmp/out")"
    bytes="$(count_bytes "$tmp/out")"
    [ "$files" -gt 0 ] || die "$name: no documents extracted"

    rm -f -- "$marker"
    rm -rf -- "$dest"
    mv -- "$tmp/out" "$dest"
    {
        echo "corpus=$name"
        echo "package=$pkg"
        echo "version=$ver"
        echo "params=$params"
        echo "files=$files"
        echo "bytes=$bytes"
        echo "fetched=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } > "$marker.tmp"
    mv -- "$marker.tmp" "$marker"           # written last: marks completion
    [ "$KEEP_TMP" -eq 1 ] && note "$name: temporary folder kept: $tmp" || { rm -rf -- "$tmp"; trap - EXIT; }
    note "$name: $files files, $(human "$bytes") in $dest"
}

mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"

if [ "$LIST" -eq 1 ]; then list_corpora; exit 0; fi
[ "${#NAMES[@]}" -gt 0 ] || { usage >&2; exit 2; }
for n in "${NAMES[@]}"; do
    corpus_packages "$n" >/dev/null || die "unknown corpus '$n' (known: ${CORPORA[*]})"
done
for cmd in apt-get apt-cache dpkg-deb tar xz gzip grep awk flock; do
    command -v "$cmd" >/dev/null || die "'$cmd' is required"
done

for n in "${NAMES[@]}"; do
    (
        exec 9> "$DATA_DIR/.lock-$n"
        flock 9
        fetch_one "$n"
    )
done

echo
printf '%-12s %8s %14s %10s  %s\n' CORPUS FILES BYTES SIZE PATH
for n in "${NAMES[@]}"; do
    m="$DATA_DIR/$n.complete"
    printf '%-12s %8s %14s %10s  %s\n' "$n" "$(marker_get "$m" files)" "$(marker_get "$m" bytes)" \
        "$(human "$(marker_get "$m" bytes)")" "$DATA_DIR/$n"
done
