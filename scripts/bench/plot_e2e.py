#!/usr/bin/python3
"""Plots of the end-to-end benchmark (scripts/bench/e2e-bench.sh; needs python3-matplotlib).

  scripts/bench/plot_e2e.py --e2e device-out/e2e.json --out docs/bench

Writes e2e-<archive>.png per archive: one panel per task (own time scale), one bar per config,
stacked by the `gtadoc run --stats` phases (load, init, traversal, shuffle, merge, write, any
other `*_s` phase, the rest of `total_s`) plus the process overhead outside `total_s` (wall -
total: start-up, CUDA context teardown, mpirun). The raw-text reference is a hatched wall-time
bar. A red cross marks a config whose output differed or that failed.
"""
import argparse
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = ["load_s", "init_s", "traversal_s", "shuffle_s", "merge_s", "write_s"]
COLORS = {"load_s": "#4e79a7", "init_s": "#f28e2b", "traversal_s": "#e15759", "shuffle_s": "#76b7b2",
          "merge_s": "#59a14f", "write_s": "#edc948", "rest": "#bab0ac", "process": "#d3d3d3"}
CONFIG_ORDER = ["reference", "gpu", "gpu-np2", "cpu", "cpu-np2", "auto", "cpu1"]


def plot_archive(arch, rows, out):
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    extra = sorted({k for r in rows for k in r if k.endswith("_s") and k not in PHASES
                    and k not in ("total_s", "wall_s")})
    phases = PHASES + extra
    cmap = plt.get_cmap("tab20")
    colors = dict(COLORS)
    for i, k in enumerate(extra):
        colors[k] = cmap(i)
    ncols = min(4, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows), squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.axis("off")
    for ax, task in zip(axes.flat, tasks):
        trs = [r for r in rows if r["task"] == task]
        trs.sort(key=lambda r: CONFIG_ORDER.index(r["config"]) if r["config"] in CONFIG_ORDER else 99)
        for i, r in enumerate(trs):
            ok = r.get("rc") == 0 and r.get("match") is not False and r.get("ref_match") is not False
            wall = r.get("wall_s") or 0.0
            if r["config"] == "reference":
                ax.bar(i, wall, 0.7, color="#ffffff", edgecolor="#555555", hatch="//")
            elif r.get("rc") == 0:
                bottom = 0.0
                for k in phases:
                    v = r.get(k) or 0.0
                    ax.bar(i, v, 0.7, bottom=bottom, color=colors[k])
                    bottom += v
                tot = r.get("total_s") or bottom
                ax.bar(i, max(0.0, tot - bottom), 0.7, bottom=bottom, color=colors["rest"])
                ax.bar(i, max(0.0, wall - max(tot, bottom)), 0.7, bottom=max(tot, bottom),
                       color=colors["process"], edgecolor="#999999", linewidth=0.3)
            if not ok:
                ax.plot(i, wall or 0.0, "x", color="red", markersize=10, mew=2)
        ax.set_xticks(range(len(trs)))
        ax.set_xticklabels([r["config"] for r in trs], rotation=35, ha="right", fontsize=8)
        ax.set_title(task, fontsize=10)
        ax.set_ylabel("seconds", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    labels = [k[:-2] for k in phases] + ["rest of total", "process (wall - total)", "raw-text reference"]
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in phases + ["rest", "process"]]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="#ffffff", edgecolor="#555555", hatch="//"))
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8)
    fig.suptitle(f"gtadoc run end to end: {arch} (phases from --stats; best of the repetitions)", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    path = os.path.join(out, f"e2e-{arch}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--e2e", required=True, help="e2e.json written by scripts/bench/e2e_table.py")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.e2e) as f:
        rows = json.load(f)["rows"]
    for arch in dict.fromkeys(r["archive"] for r in rows):
        print(plot_archive(arch, [r for r in rows if r["archive"] == arch], args.out))


if __name__ == "__main__":
    main()
