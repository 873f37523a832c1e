#!/usr/bin/python3
"""Plots for docs/bench from the benchmark JSON files (needs python3-matplotlib).

  scripts/bench/plot.py --engines docs/bench/engines-h200-*.json --compression \
      docs/bench/compression-dev.json --out docs/bench

Writes engines-<corpus>.png (wall time per task and engine, split into load / init / traversal
/ rest for gtadoc engines), compression.png (ratio per corpus and method; kept in docs/bench as
compression-dev.png) and, with --query FILE (the query-bench.jsonl of scripts/bench/query-bench.sh),
query-speedup.png: the resident GPU engine's speed-up over the sequential CPU engine and over the
raw-text GPU baseline per task.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ENGINES = ["raw-cpu", "raw-wc", "raw-gpu", "cpu1", "cpuN", "gpu"]
COLORS = {"load_s": "#4e79a7", "init_s": "#f28e2b", "traversal_s": "#e15759", "rest": "#bab0ac"}


def plot_engines(paths, out):
    rows = []
    for p in paths:
        rows += json.load(open(p))["rows"]
    for corpus in sorted({r["corpus"] for r in rows}):
        rs = [r for r in rows if r["corpus"] == corpus and r["engine"] in ENGINES]
        tasks = list(dict.fromkeys(r["task"] for r in rs))
        fig, ax = plt.subplots(figsize=(12, 5))
        width = 0.13
        for ei, eng in enumerate(ENGINES):
            for ti, task in enumerate(tasks):
                match = [r for r in rs if r["task"] == task and r["engine"] == eng]
                if not match:
                    continue
                r = match[0]
                x = ti + (ei - len(ENGINES) / 2) * width
                wall = r.get("wall_s", r.get("total_s"))
                if "load_s" in r:
                    parts = [("load_s", r["load_s"]), ("init_s", r["init_s"]),
                             ("traversal_s", r["traversal_s"]),
                             ("rest", max(0.0, wall - r["load_s"] - r["init_s"] - r["traversal_s"]))]
                    bottom = 0.0
                    for key, v in parts:
                        ax.bar(x, v, width, bottom=bottom, color=COLORS[key])
                        bottom += v
                else:
                    ax.bar(x, wall, width, color="#76b7b2", hatch="//", edgecolor="white")
                ax.text(x, wall, eng, rotation=90, fontsize=6, ha="center", va="bottom")
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks)
        ax.set_ylabel("wall seconds (end to end)")
        ax.set_title(f"{corpus}: engines per task (bars split load / init / traversal / rest; "
                     "hatched = raw-text baselines)")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
        ax.legend(handles, ["load", "init", "traversal", "rest (merge, format, write, start-up)"],
                  fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"engines-{corpus}.png"), dpi=110)
        plt.close(fig)


def plot_compression(path, out):
    data = json.load(open(path))  # scripts/bench/compression.sh --json
    rows = [dict(r, corpus=c["name"]) for c in data["corpora"] for r in c["results"]
            if r.get("ok") and r.get("threads", 1) == 1]
    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(1, len(methods))
    for mi, m in enumerate(methods):
        for ci, c in enumerate(corpora):
            match = [r for r in rows if r["corpus"] == c and r["method"] == m]
            if match:
                ax.bar(ci + (mi - len(methods) / 2) * width, match[0]["ratio"], width,
                       color=plt.cm.tab10(mi), label=m if ci == 0 else None)
    ax.set_xticks(range(len(corpora)))
    ax.set_xticklabels(corpora)
    ax.set_ylabel("compression ratio (input / compressed)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("gtadoc archive size against gzip, zstd and xz")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compression.png"), dpi=110)
    plt.close(fig)


def plot_query(path, out):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    rows = [r for r in rows if "info" not in r]
    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(14, 5), sharey=False)
    for ax, base, title in ((axes[0], "cpu1", "GPU engine vs sequential CPU engine (target 60x)"),
                            (axes[1], "raw-gpu", "GPU engine vs raw-text GPU baseline (target 3x)")):
        width = 0.8 / max(1, len(corpora))
        for ci, c in enumerate(corpora):
            for ti, t in enumerate(tasks):
                by = {r["engine"]: r for r in rows if r["corpus"] == c and r["task"] == t}
                if "gpu" not in by or base not in by:
                    continue
                v = by[base]["median_s"] / by["gpu"]["median_s"]
                ax.bar(ti + (ci - len(corpora) / 2 + 0.5) * width, v, width,
                       color=plt.cm.tab10(ci), label=c if ti == 0 else None)
        ax.axhline(60 if base == "cpu1" else 3, color="black", linestyle="--", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks, rotation=20, fontsize=8)
        ax.set_ylabel("speed-up (resident query time ratio)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "query-speedup.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", nargs="*", default=[])
    ap.add_argument("--compression")
    ap.add_argument("--query")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.engines:
        plot_engines(a.engines, a.out)
    if a.compression:
        plot_compression(a.compression, a.out)
    if a.query:
        plot_query(a.query, a.out)


if __name__ == "__main__":
    main()
