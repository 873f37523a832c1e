#!/usr/bin/env python3
"""Markdown tables of scripts/bench/scaling-bench.sh: end-to-end runs (scaling-rows.jsonl) and,
when given, the resident series (serve-bench.jsonl files of each archive).

  scaling_table.py scaling-rows.jsonl [serve-synth-N/serve-bench.jsonl ...]

End to end: every run's phases (`--stats`, max over ranks) and wall time; weak efficiency =
time(1 GPU, synth-1) / time(N GPUs, synth-N); strong speed-up = time(1 GPU, synth-A) /
time(N GPUs, synth-A). Resident: uncached p50 of `gtadoc serve` (one client), same ratios."""
import json
import re
import sys

PHASES = ["load", "init", "traversal", "shuffle", "merge", "write"]


def rows_of(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def archive_n(name):
    return int(name.rsplit("-", 1)[1])


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def end_to_end(rows):
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    print("## End to end (`gtadoc run`, a fresh process; N > 1 under mpirun)\n")
    print("| task | corpus | input MB | shards | GPUs | " + " | ".join(PHASES) +
          " | total s | wall s | output MB | same as 1 GPU |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(PHASES) + "---:|---:|---:|---|")
    for t in tasks:
        for r in sorted((r for r in rows if r["task"] == t),
                        key=lambda r: (archive_n(r["archive"]), r["gpus"])):
            s = r.get("stats") or {}
            ph = " | ".join(fmt(s.get(p + "_s")) for p in PHASES)
            ok = {True: "yes", False: "**no**", None: "-"}[r["match"]]
            if r["rc"] != 0:
                ok = f"failed (rc {r['rc']})"
            print(f'| {t} | {r["archive"]} | {r["input_bytes"] / 1e6:.0f} | {r["shards"]} | '
                  f'{r["gpus"]} | {ph} | {fmt(s.get("total_s"))} | {r["wall_s"]:.3f} | '
                  f'{r["output_bytes"] / 1e6:.1f} | {ok} |')
    print()
    return tasks


def scaling(times, tasks, counts, label):
    """times[(task, archive N, gpus)] = seconds."""
    print(f"## {label}: weak efficiency and strong speed-up\n")
    weak = [n for n in counts if n > 1 and (tasks[0], n, n) in times]
    head = " | ".join(f"weak {n}" for n in weak)
    strong_cols = [(a, n) for a in counts for n in counts if 1 < n <= a]
    head2 = " | ".join(f"strong synth-{a} on {n}" for a, n in strong_cols)
    print(f"| task | {head} | {head2} |")
    print("|---|" + "---:|" * (len(weak) + len(strong_cols)))
    for t in tasks:
        w = [ratio(times.get((t, 1, 1)), times.get((t, n, n))) for n in weak]
        s = [ratio(times.get((t, a, 1)), times.get((t, a, n))) for a, n in strong_cols]
        print(f"| {t} | " + " | ".join(w + s) + " |")
    print()


def resident(paths):
    times = {}
    tasks = []
    for p in paths:
        m = re.search(r"serve-synth-(\d+)", p)
        if not m:
            continue
        a = int(m.group(1))
        for r in rows_of(p):
            if r["mode"] != "uncached" or not (r.get("load") or {}).get("ok"):
                continue
            g = re.fullmatch(r"gpu(?:-np(\d+))?", r["config"])
            if not g:
                continue
            n = int(g.group(1) or 1)
            times[(r["task"], a, n)] = r["load"]["p50_ms"] / 1000
            if r["task"] not in tasks:
                tasks.append(r["task"])
            if r.get("match") is False:
                print(f"**{r['config']} {r['task']} on synth-{a}: differs from gtadoc run**\n")
    if not times:
        return
    counts = sorted({k[2] for k in times} | {k[1] for k in times})
    print("## Resident (`gtadoc serve`, uncached p50 ms, one client)\n")
    print("| task | corpus | GPUs | p50 ms |")
    print("|---|---|---:|---:|")
    for t in tasks:
        for (tt, a, n), v in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            if tt == t:
                print(f"| {t} | synth-{a} | {n} | {v * 1000:.1f} |")
    print()
    scaling(times, tasks, counts, "Resident")


def main():
    rows = rows_of(sys.argv[1])
    if rows:
        tasks = end_to_end(rows)
        counts = sorted({r["gpus"] for r in rows})
        for key, label in (("total_s", "End to end, `--stats` total"), (None, "End to end, wall")):
            times = {}
            for r in rows:
                if r["rc"] != 0:
                    continue
                v = (r.get("stats") or {}).get(key) if key else r["wall_s"]
                times[(r["task"], archive_n(r["archive"]), r["gpus"])] = v
            scaling(times, tasks, counts, label)
    resident(sys.argv[2:])


if __name__ == "__main__":
    main()
