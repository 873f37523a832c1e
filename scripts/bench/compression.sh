#!/usr/bin/env bash
# compression.sh — compression ratio and speed of `gtadoc compress` against
# gzip, zstd and xz, over real corpora.
#
#   scripts/bench/compression.sh [options] [CORPUS_DIR...]
#
# For every corpus directory (default: the corpora fetched by
# scripts/datasets/fetch.sh that are complete, then data/sample):
#
#   gtadoc compress DIR -o OUT.gtd --threads 1      and --threads N (all)
#   tar of the corpus (name-sorted, owner/mtime zeroed), then
#   gzip -6, zstd -3 -T1, zstd -19 -T1, xz -6 -T1   on that tar
#
# and reports, per method: compressed bytes, ratio, wall time, speed and
# peak RSS. Markdown goes to stdout, progress to stderr, JSON to --json FILE.
#
# Definitions:
#   input bytes   sum of the sizes of the corpus's regular files (the tar is
#                 larger: 512-byte headers and padding per file)
#   size          compressed bytes: the .gtd archive's files summed (du -sb
#                 less the directories' own entries), or the compressed tar
#   ratio         input bytes / size
#   MB/s          input bytes / 10^6 / wall seconds, for every method
#   wall          best (smallest) of --reps runs, page cache warm (the input
#                 is read once before timing)
#   peak RSS      max resident set size of the command (GNU time, %M)
#
# Options:
#   --json FILE       also write the results as JSON
#   --threads N       the "all threads" count for gtadoc (default: nproc)
#   --reps R          runs per measurement, best wall time kept (default 1)
#   --methods LIST    comma list among gtadoc,gzip-6,zstd-3,zstd-19,xz-6
#                     (default: all of them)
#   --no-gtadoc       same as leaving gtadoc out of --methods
#   --verify          after each gtadoc run, decompress and compare with the
#                     input (diff -r); a mismatch marks the row failed
#   --work DIR        scratch folder (default: a new one under $TMPDIR; it
#                     needs room for a tar and an archive of the largest corpus)
#   -h, --help        this text
#
# Environment: GTADOC (gtadoc binary; default build/gtadoc of the repo),
# GTADOC_DATA (fetch cache, default $HOME/.cache/gtadoc/datasets).
# Needs GNU time at /usr/bin/time (Debian package "time"), tar, gzip, zstd, xz.
set -euo pipefail
export LC_ALL=C

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

die()  { echo "compression.sh: error: $*" >&2; exit 1; }
note() { echo "compression.sh: $*" >&2; }

JSON=""
THREADS="$(nproc)"
REPS=1
METHODS="gtadoc,gzip-6,zstd-3,zstd-19,xz-6"
VERIFY=0
WORK=""
CORPORA=()

while [ $# -gt 0 ]; do
    case "$1" in
        --json)      [ $# -ge 2 ] || die "--json needs a file"; JSON="$2"; shift 2 ;;
        --json=*)    JSON="${1#*=}"; shift ;;
        --threads)   [ $# -ge 2 ] || die "--threads needs a value"; THREADS="$2"; shift 2 ;;
        --threads=*) THREADS="${1#*=}"; shift ;;
        --reps)      [ $# -ge 2 ] || die "--reps needs a value"; REPS="$2"; shift 2 ;;
        --reps=*)    REPS="${1#*=}"; shift ;;
        --methods)   [ $# -ge 2 ] || die "--methods needs a value"; METHODS="$2"; shift 2 ;;
        --methods=*) METHODS="${1#*=}"; shift ;;
        --no-gtadoc) METHODS="$(echo ",$METHODS," | sed 's/,gtadoc,/,/; s/^,//; s/,$//')"; shift ;;
        --verify)    VERIFY=1; shift ;;
        --work)      [ $# -ge 2 ] || die "--work needs a value"; WORK="$2"; shift 2 ;;
        --work=*)    WORK="${1#*=}"; shift ;;
        -h|--help)   sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        --)          shift; CORPORA+=("$@"); break ;;
        -*)          die "unknown option '$1' (see --help)" ;;
        *)           CORPORA+=("$1"); shift ;;
    esac
done

[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive number"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive number"
for m in ${METHODS//,/ }; do
    case "$m" in gtadoc|gzip-6|zstd-3|zstd-19|xz-6) ;; *) die "unknown method '$m'" ;; esac
done
has_method() { [[ ",$METHODS," == *",$1,"* ]]; }

[ -x /usr/bin/time ] && /usr/bin/time -f '%M' true 2>/dev/null \
    || die "GNU time is needed at /usr/bin/time (Debian: apt-get install time)"

GTADOC="${GTADOC:-$repo/build/gtadoc}"
if has_method gtadoc; then
    if [ ! -x "$GTADOC" ]; then
        note "warning: no gtadoc binary at $GTADOC (set GTADOC); gtadoc rows skipped"
        METHODS="$(echo ",$METHODS," | sed 's/,gtadoc,/,/; s/^,//; s/,$//')"
    else
        GTADOC="$(cd "$(dirname "$GTADOC")" && pwd)/$(basename "$GTADOC")"
    fi
fi
for m in zstd xz gzip; do
    if ! command -v "$m" >/dev/null; then
        note "warning: '$m' not found; its rows are skipped"
        METHODS="$(echo ",$METHODS," | sed "s/,$m-[0-9]*//g; s/^,//; s/,\$//")"
    fi
done

# default corpora: complete fetched corpora, then the bundled sample
if [ "${#CORPORA[@]}" -eq 0 ]; then
    data="${GTADOC_DATA:-$HOME/.cache/gtadoc/datasets}"
    for n in gcide python-doc openjdk-doc linux; do
        [ -f "$data/$n.complete" ] && [ -d "$data/$n" ] && CORPORA+=("$data/$n")
    done
    CORPORA+=("$repo/data/sample")
fi
for c in "${CORPORA[@]}"; do [ -d "$c" ] || die "not a directory: $c"; done

if [ -z "$WORK" ]; then
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/gtadoc-bench.XXXXXX")"
    trap 'rm -rf -- "$WORK"' EXIT
else
    mkdir -p "$WORK"
fi

# ---------------------------------------------------------------- measuring

now_ns() { date +%s%N; }

# run_timed LOG CMD...: runs CMD (stdout+stderr to LOG), sets WALL (s) and
# RSS_KB; returns CMD's status.
run_timed() {
    local log="$1"; shift
    local t0 t1 rc=0
    t0="$(now_ns)"
    /usr/bin/time -f '%M' -o "$WORK/time.out" "$@" > "$log" 2>&1 || rc=$?
    t1="$(now_ns)"
    WALL="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')"
    RSS_KB="$(tail -n 1 "$WORK/time.out" 2>/dev/null | tr -dc '0-9')"
    [ -n "$RSS_KB" ] || RSS_KB=0
    return "$rc"
}

size_of() { # bytes of a file, or of all files below a folder
    if [ -d "$1" ]; then
        find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%d", s}'
    else
        stat -c %s -- "$1"
    fi
}

ROWS_MD=()
JSON_CORPORA=()
json_str() {
    local s="$1"
    s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\n'/\\n}"; s="${s//$'\t'/\\t}"; s="${s//$'\r'/\\r}"
    printf '"%s"' "$s"
}

# measure CORPUS_NAME INPUT_BYTES METHOD THREADS OUT_PATH CMD...
# Runs CMD --reps times (OUT_PATH removed before each run), records a row.
JSON_ROWS=()
measure() {
    local cname="$1" inbytes="$2" method="$3" threads="$4" outp="$5"; shift 5
    local r best="" rss=0 ok=1 size=0 log="$WORK/cmd.log" err=""
    for ((r = 1; r <= REPS; r++)); do
        rm -rf -- "$outp"
        if ! run_timed "$log" "$@"; then
            ok=0; err="$(tail -n 5 "$log")"
            note "  $method (threads $threads) FAILED:"; sed 's/^/    /' "$log" | tail -n 5 >&2
            break
        fi
        if [ -z "$best" ] || awk -v a="$WALL" -v b="$best" 'BEGIN {exit !(a < b)}'; then best="$WALL"; fi
        [ "$RSS_KB" -gt "$rss" ] && rss="$RSS_KB"
    done
    if [ "$ok" -eq 1 ] && [ ! -e "$outp" ]; then ok=0; err="no output at $outp"; note "  $method: $err"; fi
    if [ "$ok" -eq 1 ]; then
        size="$(size_of "$outp")"
        if [ "$method" = gtadoc ] && [ "$VERIFY" -eq 1 ]; then
            rm -rf -- "$WORK/dec"
            if ! "$GTADOC" decompress "$outp" -o "$WORK/dec" > "$log" 2>&1; then
                ok=0; err="decompress failed: $(tail -n 3 "$log")"
            elif ! diff -r -q -- "$CUR_DIR" "$WORK/dec" > "$log" 2>&1; then
                ok=0; err="decompressed tree differs: $(head -n 3 "$log")"
            fi
            rm -rf -- "$WORK/dec"
            [ "$ok" -eq 1 ] || note "  $method: verify FAILED: $err"
        fi
    fi
    rm -rf -- "$outp"

    local label="$method"
    [ "$method" = gtadoc ] && label="gtadoc --threads $threads"
    if [ "$ok" -eq 1 ]; then
        local ratio mbs
        ratio="$(awk -v i="$inbytes" -v s="$size" 'BEGIN {r = 0; if (s > 0) r = i / s; printf "%.3f", r}')"
        mbs="$(awk -v i="$inbytes" -v w="$best" 'BEGIN {r = 0; if (w > 0) r = i / 1e6 / w; printf "%.2f", r}')"
        note "  $label: $size bytes, ratio $ratio, ${best}s, $mbs MB/s, peak RSS $((rss / 1024)) MB"
        ROWS_MD+=("$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$cname" "$label" "$size" \
            "$ratio" "$best" "$mbs" "$(awk -v k="$rss" 'BEGIN {printf "%.1f", k / 1024}')")")
        JSON_ROWS+=("{\"method\": $(json_str "$method"), \"threads\": $threads, \"ok\": true, \"bytes\": $size, \"ratio\": $ratio, \"wall_s\": $best, \"mb_per_s\": $mbs, \"peak_rss_kb\": $rss, \"reps\": $REPS, \"verified\": $([ "$method" = gtadoc ] && [ "$VERIFY" -eq 1 ] && echo true || echo false)}")
    else
        ROWS_MD+=("| $cname | $label | failed | | | | |")
        JSON_ROWS+=("{\"method\": $(json_str "$method"), \"threads\": $threads, \"ok\": false, \"error\": $(json_str "$err")}")
    fi
}

# ---------------------------------------------------------------- main loop

when="$(date -u +%Y-%m-%dT%H:%M:%SZ)"     # start of the run
SUMMARY_MD=()
for dir in "${CORPORA[@]}"; do
    dir="$(cd "$dir" && pwd)"
    CUR_DIR="$dir"
    cname="$(basename "$dir")"
    files="$(find "$dir" -type f | wc -l | tr -d ' ')"
    inbytes="$(size_of "$dir")"
    note "$cname: $files files, $inbytes bytes ($dir)"
    [ "$files" -gt 0 ] || { note "  empty corpus, skipped"; continue; }
    find "$dir" -type f -print0 | xargs -0 cat > /dev/null      # warm the page cache
    JSON_ROWS=()

    if has_method gtadoc; then
        tlist=1; [ "$THREADS" -gt 1 ] && tlist="1 $THREADS"
        for t in $tlist; do
            measure "$cname" "$inbytes" gtadoc "$t" "$WORK/out.gtd" \
                "$GTADOC" compress "$dir" -o "$WORK/out.gtd" --threads "$t"
        done
    fi

    tarbytes=0
    if has_method gzip-6 || has_method zstd-3 || has_method zstd-19 || has_method xz-6; then
        tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
            -C "$dir" -cf "$WORK/corpus.tar" .
        tarbytes="$(stat -c %s "$WORK/corpus.tar")"
        cat "$WORK/corpus.tar" > /dev/null
        tarf="$WORK/corpus.tar"
        # shellcheck disable=SC2016
        has_method gzip-6  && measure "$cname" "$inbytes" gzip-6 1 "$WORK/c.gz" \
            sh -c 'exec gzip -6 -c -- "$1" > "$2"' sh "$tarf" "$WORK/c.gz"
        # shellcheck disable=SC2016
        has_method zstd-3  && measure "$cname" "$inbytes" zstd-3 1 "$WORK/c.zst" \
            sh -c 'exec zstd -q -3 -T1 -c -- "$1" > "$2"' sh "$tarf" "$WORK/c.zst"
        # shellcheck disable=SC2016
        has_method zstd-19 && measure "$cname" "$inbytes" zstd-19 1 "$WORK/c.zst" \
            sh -c 'exec zstd -q -19 -T1 -c -- "$1" > "$2"' sh "$tarf" "$WORK/c.zst"
        # shellcheck disable=SC2016
        has_method xz-6    && measure "$cname" "$inbytes" xz-6 1 "$WORK/c.xz" \
            sh -c 'exec xz -6 -T1 -c -- "$1" > "$2"' sh "$tarf" "$WORK/c.xz"
        rm -f -- "$WORK/corpus.tar"
    fi

    SUMMARY_MD+=("| $cname | $files | $inbytes | $tarbytes | \`$dir\` |")
    rows="$(IFS=,; echo "${JSON_ROWS[*]}")"
    JSON_CORPORA+=("{\"name\": $(json_str "$cname"), \"path\": $(json_str "$dir"), \"files\": $files, \"bytes\": $inbytes, \"tar_bytes\": $tarbytes, \"results\": [${rows}]}")
done

# ---------------------------------------------------------------- report

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
ver_of() { "$@" 2>&1 | head -n 1 || true; }
gzip_v="$(ver_of gzip --version)"; zstd_v="$(ver_of zstd --version)"; xz_v="$(ver_of xz --version)"
gtadoc_v=""
if has_method gtadoc; then gtadoc_v="$(timeout 10 "$GTADOC" --version 2>/dev/null | head -n 1 || true)"; fi

echo "# Compression benchmark"
echo
echo "started $when; CPU: ${cpu:-unknown} ($(nproc) threads); gtadoc: $([ -n "${GTADOC:-}" ] && has_method gtadoc && echo "\`$GTADOC\` ${gtadoc_v}" || echo "not run");"
echo "best of $REPS run(s), warm page cache. Baselines compress a tar of the corpus;"
echo "ratio and MB/s are computed from the corpus's file bytes for every method."
echo
echo "| corpus | files | input bytes | tar bytes | path |"
echo "|---|---:|---:|---:|---|"
printf '%s\n' "${SUMMARY_MD[@]}"
echo
echo "| corpus | method | size (bytes) | ratio | wall (s) | MB/s | peak RSS (MB) |"
echo "|---|---|---:|---:|---:|---:|---:|"
[ "${#ROWS_MD[@]}" -eq 0 ] || printf '%s\n' "${ROWS_MD[@]}"

if [ -n "$JSON" ]; then
    {
        echo "{"
        echo "  \"benchmark\": \"compression\","
        echo "  \"date\": $(json_str "$when"),"
        echo "  \"host\": {\"cpu\": $(json_str "$cpu"), \"threads\": $(nproc)},"
        echo "  \"gtadoc\": $(has_method gtadoc && json_str "$GTADOC" || echo null),"
        echo "  \"gtadoc_version\": $(json_str "$gtadoc_v"),"
        echo "  \"tools\": {\"gzip\": $(json_str "$gzip_v"), \"zstd\": $(json_str "$zstd_v"), \"xz\": $(json_str "$xz_v")},"
        echo "  \"threads_all\": $THREADS,"
        echo "  \"reps\": $REPS,"
        echo "  \"corpora\": ["
        for ((i = 0; i < ${#JSON_CORPORA[@]}; i++)); do
            sep=","; [ "$i" -eq $((${#JSON_CORPORA[@]} - 1)) ] && sep=""
            echo "    ${JSON_CORPORA[$i]}$sep"
        done
        echo "  ]"
        echo "}"
    } > "$JSON"
    note "JSON written to $JSON"
fi
