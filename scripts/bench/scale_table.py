#!/usr/bin/env python3
"""Tables and plot for scripts/bench/scale-bench.sh (how gtadoc's costs grow with corpus size).

  scripts/bench/scale_table.py --out OUT    # reads OUT/scale-{meta.json,rows.jsonl,notes.txt}

Writes OUT/scale.md (and prints it): the corpora with their compression and floor (`cat` of the
archive), every `gtadoc run` as a row (corpus, task, config) with its wall time, seconds per
input GB (1 GB = 10^9 bytes), the `-v` phases and the floor; seconds per GB by corpus size;
the raw-text baselines; the resident service. And OUT/scale.png: seconds per GB against corpus
size, one line per (task, config) and per raw baseline, when matplotlib is importable (else a
note in scale.md).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_table import read_jsonl as e2e_read_jsonl, sec, yes  # noqa: E402  (shared with the e2e tables)

PHASE_ORDER = ["open", "load", "init", "traversal", "collect", "shuffle", "merge", "write"]
CONFIG_ORDER = ["gpu", "gpus", "cpu"]


def read_jsonl(path):
    # e2e_table's reader, without its rows for unreadable lines (these tables need a "kind").
    return [r for r in e2e_read_jsonl(path) if "kind" in r]


def gb(b):
    return (b or 0) / 1e9


def config_key(c):
    base = c.rstrip("0123456789")
    return CONFIG_ORDER.index(base) if base in CONFIG_ORDER else 99


def series_label(r):
    if r["kind"] == "raw":
        return f"{r['tool']} {r['task']}" + (f" ({r['threads']} threads)" if r["tool"] == "raw_wordcount" else "")
    return f"{r['task']}, {r['config']}"


def render(meta, notes, rows, plot_note):
    corpora = {}
    for r in rows:
        c = corpora.setdefault(r["corpus"], {"bytes": r.get("input_bytes", 0), "synthetic": r.get("synthetic")})
        if r["kind"] in ("corpus", "compress", "floor"):
            c[r["kind"]] = r
        c["bytes"] = r.get("input_bytes", c["bytes"])
    order = sorted(corpora, key=lambda c: (corpora[c]["bytes"], c))
    runs = [r for r in rows if r["kind"] == "run"]
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    L = ["# gtadoc at scale: costs against corpus size", ""]
    if meta:
        L.append(f"Machine: {meta.get('host')} ({meta.get('cores')} cores, {meta.get('cpu') or '?'}, "
                 f"{meta.get('memory_gib')} GiB; GPUs: {meta.get('gpus')}"
                 f"{': ' + meta['gpu_names'] if meta.get('gpu_names') else ''}), {meta.get('date')}, "
                 f"sources {meta.get('sources')}, build {meta.get('build_dir')}. Work in "
                 f"{meta.get('work')} ({meta.get('work_fs')}).")
        L.append("")
        L.append(f"Real text: {meta.get('real_files')} text files, {gb(meta.get('real_bytes')):.2f} GB under "
                 f"{meta.get('train')} (corpus `real`). Synthetic corpora (`synth-SIZE`, gtadoc_gen, seed "
                 f"{meta.get('seed')}: the text is synthetic, the answers exact) from a model trained on "
                 f"{meta.get('train_files')} of those files, {gb(meta.get('train_bytes')):.2f} GB"
                 + (f", in {meta['train_s']:.1f} s" if isinstance(meta.get("train_s"), (int, float)) else "")
                 + f" (model {meta.get('model_bytes', 0) / 1e6:.0f} MB).")
        L.append("")
    L.append("Times: wall seconds of a fresh process (`$EPOCHREALTIME` around it), page cache warm; "
             "s/GB = seconds per input GB (10^9 bytes of text); CPU s = user + system seconds of every "
             "thread (`/usr/bin/time`; near e2e s × cores, the run is bound by the host's cores); "
             "phases from the `-v` timings line "
             "(max over ranks); `total` from `--stats`; floor = `cat` of every archive file to "
             "/dev/null, warm (cold: after dropping the page cache). Configs: gpu = `--engine gpu`, "
             "gpusN = `--gpus N`, cpu = `--engine cpu` on every core. `match` = output byte-identical "
             "to the first config's (resident: to `gtadoc run`'s; raw: to gtadoc's).")
    L.append("")
    for n in notes:
        L.append(f"- {n}")
    if notes:
        L.append("")

    L += ["## Corpora, compression and the floor", "",
          "| corpus | input GB | files | generate s | compress s | MB/s | peak RSS MiB | archive MB | "
          "ratio | shards | floor warm s | floor cold s |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in order:
        c = corpora[name]
        co, cp, fl = c.get("corpus") or {}, c.get("compress") or {}, c.get("floor") or {}
        info = cp.get("info") or {}
        if cp and cp.get("rc") != 0:
            comp = f"FAILED (exit {cp.get('rc')})"
        else:
            comp = sec(cp.get("wall_s")) + (" (kept)" if cp.get("reused") else "")
        rss = cp.get("peak_rss_kib")
        cold = fl.get("cold_s")
        L.append(f"| {name} | {gb(c['bytes']):.3f} | {co.get('files', '')} | {sec(co.get('gen_s'))} | {comp} | "
                 f"{cp.get('mb_s', '') if cp.get('rc') == 0 else ''} | "
                 f"{'' if rss is None else f'{rss / 1024:.0f}'} | "
                 f"{cp.get('archive_bytes', 0) / 1e6:.1f} | "
                 f"{info.get('compression_ratio', 0):.2f} | {info.get('shards', '')} | "
                 f"{sec(fl.get('warm_s'))} | "
                 f"{sec(cold) if cold is not None else ('n/a' + (' (' + fl['cold_note'] + ')' if fl.get('cold_note') else '')) if fl else ''} |")
    L.append("")

    phases = [p for p in PHASE_ORDER if any(p in (r.get("phases") or {}) for r in runs)]
    phases += sorted({p for r in runs for p in (r.get("phases") or {}) if p not in phases})
    if runs:
        L += ["## End to end (`gtadoc run`)", "",
              "| corpus | GB | task | config | engine | e2e s | s/GB | CPU s | " + " | ".join(phases) +
              " | total | output MB | match | floor warm s | e2e / floor |",
              "|---|---:|---|---|---|---:|---:|---:|" + "---:|" * len(phases) + "---:|---:|---|---:|---:|"]
        for name in order:
            fl = corpora[name].get("floor") or {}
            for task in tasks:
                for r in sorted((r for r in runs if r["corpus"] == name and r["task"] == task),
                                key=lambda r: config_key(r["config"])):
                    st = r.get("stats") or {}
                    ph = r.get("phases") or {}
                    warm = fl.get("warm_s")
                    vs_floor = f"{r['wall_s'] / warm:.0f}x" if warm and r.get("wall_s") else ""
                    if r.get("rc") != 0:
                        L.append(f"| {name} | {gb(r['input_bytes']):.3f} | {task} | {r['config']} | | "
                                 f"{sec(r.get('wall_s'))} | | | " + " | ".join("" for _ in phases) +
                                 f" | | | **FAILED** (exit {r.get('rc')}) | | |")
                        continue
                    L.append(f"| {name} | {gb(r['input_bytes']):.3f} | {task} | {r['config']} | "
                             f"{st.get('engine', '')} | {sec(r['wall_s'])} | {sec(r.get('s_per_gb'))} | "
                             f"{sec(r.get('cpu_s'))} | " +
                             " | ".join(sec(ph.get(p)) for p in phases) +
                             f" | {sec(st.get('total_s'))} | {r.get('output_bytes', 0) / 1e6:.2f} | "
                             f"{yes(r.get('match'))} | {sec(warm)} | {vs_floor} |")
        L.append("")

    # Seconds per GB by size: one row per series, one column per corpus.
    series = {}
    for r in rows:
        if r["kind"] in ("run", "raw") and r.get("rc") == 0 and r.get("s_per_gb") is not None:
            series.setdefault(series_label(r), {})[r["corpus"]] = r["s_per_gb"]
    if series:
        cols = [n for n in order if any(n in s for s in series.values())]
        L += ["## Seconds per GB by corpus size", "",
              "Growth = s/GB at the largest corpus over s/GB at the smallest synthetic corpus of the "
              "row (1.00 = linear cost).", "",
              "| task / config | " + " | ".join(f"{n} ({gb(corpora[n]['bytes']):.2f} GB)" for n in cols) +
              " | growth |",
              "|---|" + "---:|" * len(cols) + "---:|"]
        for label, s in series.items():
            syn = [n for n in cols if n in s and corpora[n].get("synthetic")]
            growth = f"{s[syn[-1]] / s[syn[0]]:.2f}" if len(syn) > 1 and s[syn[0]] else ""
            L.append(f"| {label} | " + " | ".join(sec(s.get(n)) for n in cols) + f" | {growth} |")
        L.append("")

    raws = [r for r in rows if r["kind"] == "raw"]
    if raws:
        L += ["## Raw-text baselines (same text, same run)", "",
              "raw_wordcount: scripts/bench/raw_wordcount.cpp on every core (`--threads`); raw_gpu: "
              "the raw GPU baseline (timings from its `--timings`). `match`: raw_wordcount's first K "
              "rows against `word-count --top K`, raw_gpu against gtadoc's output of the same task.", "",
              "| corpus | tool | task | threads | s | s/GB | output MB | match | phases |",
              "|---|---|---|---:|---:|---:|---:|---|---|"]
        for name in order:
            for r in (r for r in raws if r["corpus"] == name):
                t = r.get("timings") or {}
                ph = ", ".join(f"{k[:-2]} {sec(v)}" for k, v in t.items() if k.endswith("_s"))
                ok = yes(r.get("match")) if r.get("rc") == 0 else f"failed (exit {r.get('rc')})"
                L.append(f"| {name} | {r['tool']} | {r['task']} | {r['threads']} | {sec(r['wall_s'])} | "
                         f"{sec(r.get('s_per_gb')) if r.get('rc') == 0 else ''} | "
                         f"{r.get('output_bytes', 0) / 1e6:.2f} | {ok} | {ph} |")
        L.append("")

    res = [r for r in rows if r["kind"] == "resident"]
    if res:
        L += ["## Resident (`gtadoc serve`)", "",
              "ready = seconds from the process start until `GET /healthz` answers 200; first = the "
              "first query (uncached, HTTP included); median = of the next ones (uncached).", "",
              "| corpus | config | task | ready s | first ms | median ms | n | result bytes | match |",
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
        for name in order:
            for r in (r for r in res if r["corpus"] == name):
                first, med = r.get("first_ms"), r.get("median_ms")
                L.append(f"| {name} | {r['config']} | {r['task']} | {sec(r.get('ready_s'))} | "
                         f"{'' if first is None else f'{first:.1f}'} | "
                         f"{'' if med is None else f'{med:.1f}'} | {r.get('reps')} | "
                         f"{r.get('output_bytes', '')} | {yes(r.get('match'))} |")
        L.append("")

    if plot_note:
        L += [plot_note, ""]
    checked = [r for r in rows if r["kind"] in ("run", "resident", "raw")]
    bad = [r for r in checked if r.get("match") is False or (r["kind"] == "run" and r.get("rc") != 0)]
    L.append(f"Checks: {len(runs)} runs, {sum(1 for r in runs if r.get('rc') == 0)} ran, "
             f"{sum(1 for r in checked if r.get('match') is True)} outputs compared equal, "
             + ("**failures or mismatches: " + ", ".join(f"{r['corpus']}/{r.get('task')}/{r.get('config') or r.get('tool')}"
                                                      for r in bad) + "**" if bad else "no failure, no mismatch."))
    return "\n".join(L) + "\n"


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return "Plot skipped: matplotlib is not importable here (scale.png not written)."
    series = {}  # label -> (task, config or tool, points)
    for r in rows:
        if r["kind"] in ("run", "raw") and r.get("rc") == 0 and r.get("s_per_gb") is not None:
            key = (r["task"], r["config"] if r["kind"] == "run" else r["tool"])
            series.setdefault(series_label(r), (key, []))[1].append(
                (gb(r["input_bytes"]), r["s_per_gb"], r.get("synthetic")))
    if not series:
        return "Plot skipped: no successful run."
    fig, ax = plt.subplots(figsize=(11, 6.5))
    tasks = list(dict.fromkeys(k[0].split()[0] for k, _ in series.values()))  # a colour per task name
    colors = {t: plt.get_cmap("tab10")(i % 10) for i, t in enumerate(tasks)}
    styles = {"gpu": "-", "gpus": "--", "cpu": ":", "raw_wordcount": "-.", "raw_gpu": (0, (5, 1, 1, 1, 1, 1))}
    markers = {"gpu": "o", "gpus": "s", "cpu": "^", "raw_wordcount": "D", "raw_gpu": "v"}
    xs = set()
    for label, ((task, cfg), pts) in sorted(series.items(), key=lambda kv: (tasks.index(kv[1][0][0].split()[0]), kv[0])):
        base = cfg.rstrip("0123456789")
        color = colors[task.split()[0]]
        syn = sorted(p for p in pts if p[2])
        real = [p for p in pts if not p[2]]
        xs.update(p[0] for p in pts)
        if syn:
            ax.plot([p[0] for p in syn], [p[1] for p in syn], linestyle=styles.get(base, "-"),
                    marker=markers.get(base, "o"), color=color, label=label)
        if real:
            ax.plot([p[0] for p in real], [p[1] for p in real], "x", color=color, markersize=9,
                    label=None if syn else label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted(xs))
    ax.set_xticklabels([f"{x:.3g}" for x in sorted(xs)], rotation=45)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("corpus size, GB of text (lines: synthetic corpora; x: the real text)")
    ax.set_ylabel("seconds per GB (end to end)")
    ax.set_title("gtadoc: seconds per GB against corpus size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the scale-bench.sh output directory")
    args = ap.parse_args()
    meta = {}
    p = os.path.join(args.out, "scale-meta.json")
    if os.path.exists(p):
        with open(p) as f:
            meta = json.load(f)
    notes = []
    p = os.path.join(args.out, "scale-notes.txt")
    if os.path.exists(p):
        with open(p) as f:
            notes = [n.strip() for n in f if n.strip()]
    rows = read_jsonl(os.path.join(args.out, "scale-rows.jsonl"))
    plot_note = plot(rows, os.path.join(args.out, "scale.png"))
    md = render(meta, notes, rows, plot_note)
    with open(os.path.join(args.out, "scale.md"), "w") as f:
        f.write(md)
    print(md, end="")


if __name__ == "__main__":
    main()
