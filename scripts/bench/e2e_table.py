#!/usr/bin/env python3
"""Tables for scripts/bench/e2e-bench.sh (the whole `gtadoc run`, end to end).

  scripts/bench/e2e_table.py --out OUT      # reads OUT/e2e-{meta.json,archives.jsonl,rows.jsonl,notes.txt}

Writes OUT/e2e.json (everything, rows with their `--stats` keys flattened) and OUT/e2e.md, and
prints the Markdown. Per archive: a row per task x config with the `--stats` phases (load, init,
traversal, shuffle, merge, write, any other `*_s` key, total), the process wall time, the output
size and whether the output equals the first config's (`match`) and the raw-text reference's
(`ref`); then ratios measured in the same run: GPU vs CPU (all cores), two ranks vs one, the
automatic engine choice vs the faster of gpu/cpu, CPU all cores vs one thread.
"""
import argparse
import json
import math
import os

PHASES = ["load_s", "init_s", "traversal_s", "shuffle_s", "merge_s", "write_s"]
CONFIG_ORDER = ["reference", "gpu", "gpu-np2", "gpu-np2-nccl", "gpu-np2-mpi", "gpu-gpus2", "cpu", "cpu-np2", "auto", "cpu1"]


def read_jsonl(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        rows.append({"error": f"unreadable row: {e}", "raw": line[:200]})
    return rows


def load(out):
    meta = {}
    p = os.path.join(out, "e2e-meta.json")
    if os.path.exists(p):
        with open(p) as f:
            meta = json.load(f)
    notes = []
    p = os.path.join(out, "e2e-notes.txt")
    if os.path.exists(p):
        with open(p) as f:
            notes = [n.strip() for n in f if n.strip()]
    archives = read_jsonl(os.path.join(out, "e2e-archives.jsonl"))
    rows = []
    for r in read_jsonl(os.path.join(out, "e2e-rows.jsonl")):
        if "archive" not in r:
            continue
        stats = r.pop("stats", None) or {}
        for k, v in stats.items():
            if k.endswith("_s") and isinstance(v, (int, float)):
                r[k] = v
        for k in ("engine", "ranks", "threads", "shards"):
            if k in stats:
                r[k] = stats[k]
        trav = stats.get("rank0_traversals") or []
        if trav:
            r["traversal"] = trav[0].split(":")[0]
        tot = r.get("total_s")
        if tot:
            r["outside_share"] = (tot - r.get("traversal_s", 0.0) - r.get("write_s", 0.0)) / tot
        rows.append(r)
    return meta, notes, archives, rows


def total(rows, archive, task, config):
    for r in rows:
        if r["archive"] == archive and r["task"] == task and r["config"] == config and r.get("rc") == 0:
            return r.get("total_s"), r.get("wall_s"), r
    return None, None, None


def ratios(rows, archive):
    """Per task: speed-ups measured in this run (a > 1 means the first named is faster)."""
    out = []
    tasks = list(dict.fromkeys(r["task"] for r in rows if r["archive"] == archive))
    for task in tasks:
        g, gw, _ = total(rows, archive, task, "gpu")
        g2, _, _ = total(rows, archive, task, "gpu-np2")
        c, cw, _ = total(rows, archive, task, "cpu")
        c2, _, _ = total(rows, archive, task, "cpu-np2")
        c1, _, _ = total(rows, archive, task, "cpu1")
        a, _, ar = total(rows, archive, task, "auto")
        d = {"task": task}
        if g and c:
            d["gpu_vs_cpu_total"] = c / g
        if gw and cw:
            d["gpu_vs_cpu_wall"] = cw / gw
        if g and g2:
            d["gpu_np2_vs_np1"] = g / g2
        if c and c2:
            d["cpu_np2_vs_np1"] = c / c2
        if c and c1:
            d["cpu_vs_cpu1"] = c1 / c
        if a:
            d["auto_engine"] = ar.get("engine")
            best = min(x for x in (g, c) if x) if (g or c) else None
            if best:
                d["auto_vs_best"] = a / best
                d["best_engine"] = "gpu" if g and (not c or g <= c) else "cpu"
                d["auto_within_10pct"] = a / best <= 1.10
        out.append(d)
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def sec(v):
    if v is None:
        return ""
    if v < 0.01:
        return f"{v:.4f}"
    if v < 100:
        return f"{v:.3f}"
    return f"{v:.1f}"


def yes(v):
    return "" if v is None else ("yes" if v else "**NO**")


def x(v):
    return "" if v is None else f"{v:.2f}x"


def render(meta, notes, archives, rows, rat):
    L = ["# `gtadoc run` end to end", ""]
    if meta:
        gpu = meta.get("gpu_names") or "none"
        L.append(f"Machine: {meta.get('host')} ({meta.get('cores')} cores, {meta.get('cpu') or '?'}; "
                 f"GPUs: {meta.get('gpus')}: {gpu}), {meta.get('date')}, sources {meta.get('sources')}, "
                 f"build {meta.get('build_dir')}. Best of {meta.get('reps')} runs by `total_s` (runs of "
                 f"{meta.get('repeat_under_s')} s or more are not repeated, nor any after "
                 f"{meta.get('budget_s')} s of benchmark; `n` = runs made); page cache warm."
                 + (f" Outputs written to {meta['output_fs']} (the write phase depends on the file "
                    f"system: PERFORMANCE.md, 'Writing results')." if meta.get("output_fs") else ""))
        L.append("")
    L.append("Columns: phases and `total` from `gtadoc run --stats` (max over ranks; `total` = the "
             "`run` command from start to output renamed); `wall` = the process (or `mpirun`) wall "
             "time, with start-up and exit; `outside` = (total - traversal - write) / total; "
             "`match` = output byte-identical to the first config's, `ref` = to the raw-text "
             "reference `gtadoc_reference` (small corpora). Configs: gpu = `--engine gpu`, "
             "gpu-np2 = `mpirun -np 2` with it (the default shuffle of a one-query run on one "
             "node: records reduced on each GPU, staged through host memory, pulled across the "
             "processes), gpu-np2-nccl = "
             "the same with `GTADOC_SHUFFLE=nccl`, gpu-np2-mpi = with `GTADOC_SHUFFLE=mpi`, "
             "gpu-gpus2 = `--gpus 2` (two GPUs of one process, no launcher), cpu = `--engine cpu` on all cores, cpu-np2 = "
             "`mpirun -np 2` with it, auto = no `--engine`, cpu1 = `--engine cpu --threads 1`, "
             "reference = the raw-text reference tool (wall only).")
    L.append("")
    for n in notes:
        L.append(f"- note: {n}")
    if notes:
        L.append("")
    if archives:
        L += ["## Corpora and compression", "",
              "| archive | corpus | shard size | files | input MB | shards | archive MB | ratio | "
              "compress s | MB/s |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for a in archives:
            info = a.get("info") or {}
            mb = a.get("input_bytes", 0) / 1e6
            cs = a.get("compress_s") or 0
            ok = a.get("rc") == 0
            L.append(f"| {a.get('archive')} | {a.get('corpus')} | {a.get('shard_size')} | "
                     f"{a.get('files')} | {mb:.1f} | {info.get('shards', '')} | "
                     f"{info.get('archive_bytes', 0) / 1e6:.1f} | "
                     f"{info.get('compression_ratio', 0):.2f} | "
                     f"{sec(cs) if ok else 'FAILED'} | {mb / cs if ok and cs else 0:.1f} |")
        L.append("")
    extra = sorted({k for r in rows for k in r if k.endswith("_s") and k not in PHASES
                    and k not in ("total_s", "wall_s")})
    cols = PHASES + extra
    for arch in list(dict.fromkeys(r["archive"] for r in rows)):
        a = next((a for a in archives if a.get("archive") == arch), {})
        info = a.get("info") or {}
        L.append(f"## {arch}: {a.get('input_bytes', 0) / 1e6:.1f} MB, {a.get('files', '?')} files, "
                 f"{info.get('shards', '?')} shards")
        L.append("")
        L.append("| task | config | engine | ranks | " + " | ".join(c[:-2] for c in cols) +
                 " | total | wall | n | outside | output bytes | match | ref |")
        L.append("|---|---|---|---:|" + "---:|" * len(cols) + "---:|---:|---:|---:|---:|---|---|")
        rs = [r for r in rows if r["archive"] == arch]
        tasks = list(dict.fromkeys(r["task"] for r in rs))
        for task in tasks:
            trs = sorted((r for r in rs if r["task"] == task),
                         key=lambda r: CONFIG_ORDER.index(r["config"]) if r["config"] in CONFIG_ORDER else 99)
            for r in trs:
                if r.get("rc") != 0:
                    L.append(f"| {task} | {r['config']} | | | " + " | ".join("" for _ in cols) +
                             f" | | | {r.get('reps', '')} | | | **FAILED** (exit {r.get('rc')}) | "
                             f"{r.get('error', '')[-80:].replace('|', '/')} |")
                    continue
                share = r.get("outside_share")
                L.append(f"| {task} | {r['config']} | {r.get('engine', '')} | {r.get('ranks', '')} | " +
                         " | ".join(sec(r.get(c)) for c in cols) +
                         f" | {sec(r.get('total_s'))} | {sec(r.get('wall_s'))} | {r.get('reps', '')} | "
                         f"{'' if share is None else f'{100 * share:.0f} %'} | "
                         f"{r.get('output_bytes', '')} | {yes(r.get('match'))} | {yes(r.get('ref_match'))} |")
        L.append("")
        rr = rat.get(arch, [])
        have = lambda k: any(k in d for d in rr)  # noqa: E731
        spec = [("gpu_vs_cpu_total", "gpu vs cpu (total)"), ("gpu_vs_cpu_wall", "gpu vs cpu (wall)"),
                ("gpu_np2_vs_np1", "gpu np2 vs np1"), ("cpu_np2_vs_np1", "cpu np2 vs np1"),
                ("cpu_vs_cpu1", "cpu all cores vs 1 thread")]
        spec = [s for s in spec if have(s[0])]
        if rr and (spec or have("auto_vs_best")):
            L.append(f"Ratios on {arch} (speed-ups: > 1 = the first named is faster; auto / best = "
                     "auto's total over the faster of gpu and cpu):")
            L.append("")
            head = ["task"] + [s[1] for s in spec]
            if have("auto_vs_best"):
                head += ["auto engine", "faster of gpu/cpu", "auto / best", "within 10 %"]
            L.append("| " + " | ".join(head) + " |")
            L.append("|---|" + "---:|" * len(spec) + ("---|---|---:|---|" if have("auto_vs_best") else ""))
            for d in rr:
                cells = [d["task"]] + [x(d.get(k)) for k, _ in spec]
                if have("auto_vs_best"):
                    cells += [d.get("auto_engine") or "", d.get("best_engine") or "",
                              x(d.get("auto_vs_best")), yes(d.get("auto_within_10pct"))]
                L.append("| " + " | ".join(cells) + " |")
            cells = ["geometric mean"] + [x(geomean([d.get(k) for d in rr])) for k, _ in spec]
            if have("auto_vs_best"):
                cells += ["", "", x(geomean([d.get("auto_vs_best") for d in rr])),
                          f"{sum(1 for d in rr if d.get('auto_within_10pct'))} of "
                          f"{sum(1 for d in rr if 'auto_within_10pct' in d)}"]
            L.append("| " + " | ".join(cells) + " |")
            L.append("")
    bad = [r for r in rows if r.get("rc") != 0 or r.get("match") is False or r.get("ref_match") is False]
    L.append(f"Checks: {len(rows)} rows, {sum(1 for r in rows if r.get('rc') == 0)} ran, "
             f"{sum(1 for r in rows if r.get('match') is True)} matched the first config, "
             f"{sum(1 for r in rows if r.get('ref_match') is True)} matched the reference; "
             + ("**failures or mismatches: " + ", ".join(f"{r['archive']}/{r['task']}/{r['config']}"
                                                      for r in bad) + "**" if bad else "no failure, no mismatch."))
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the e2e-bench.sh output directory")
    args = ap.parse_args()
    meta, notes, archives, rows = load(args.out)
    rat = {a: ratios(rows, a) for a in dict.fromkeys(r["archive"] for r in rows)}
    with open(os.path.join(args.out, "e2e.json"), "w") as f:
        json.dump({"meta": meta, "notes": notes, "archives": archives, "rows": rows, "ratios": rat}, f, indent=1)
    md = render(meta, notes, archives, rows, rat)
    with open(os.path.join(args.out, "e2e.md"), "w") as f:
        f.write(md)
    print(md, end="")


if __name__ == "__main__":
    main()
