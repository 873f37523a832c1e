#!/usr/bin/env python3
"""Markdown tables from gtadoc_query_bench JSON lines (scripts/bench/query-bench.sh).

    query_table.py query-bench.jsonl > query-bench.md

Per corpus: the resident time of every engine per task (median of the repetitions), the GPU
engine's speed-up over the sequential CPU engine (cpu1) and over the raw-text GPU baseline,
and the GPU traversal against the bandwidth floor (grammar bytes / measured device copy
bandwidth). Averages over the tasks are arithmetic (as the G-TADOC paper reports) and geometric.
"""
import json
import math
import sys


def fmt_s(v):
    if v is None:
        return "–"
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.3f} s"


def main():
    rows, infos = [], []
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            j = json.loads(line)
            (infos.append(j["info"]) if "info" in j else rows.append(j))
    out = ["# Resident-query benchmark (gtadoc_query_bench)", ""]
    out.append("Time of one query with the shards already resident in the engine (G-TADOC's "
               "methodology): `Engine::run` over every shard = initialization + traversal, "
               "result records on the host; median of the repetitions. raw-gpu = tokenize + "
               "group + reduce of the raw-text GPU baseline (text already uploaded). floor = "
               "grammar bytes (4 B/symbol) / measured device copy bandwidth; grammar GB/s = grammar bytes / GPU traversal time (the bandwidth the traversal achieves against the bytes it must read). `match`: every "
               "engine's reduced records equal cpu1's.")
    out.append("")
    for info in infos:
        c = info["corpus"]
        bw = info.get("device_copy_bandwidth_Bps", 0)
        out.append(f"## {c}")
        out.append("")
        loads = ", ".join(f"{k[len('load_s_'):]} {v:.3f} s" for k, v in info.items()
                          if k.startswith("load_s_"))
        out.append(f"{info['documents']} documents, {info['shards']} shards, {info['symbols']:,} "
                   f"symbols, {info['rules']:,} rules; device {info['device']}, copy bandwidth "
                   f"{bw / 1e12:.2f} TB/s, device-to-host {info.get('d2h_pinned_Bps', 0) / 1e9:.0f} "
                   f"GB/s pinned / {info.get('d2h_pageable_Bps', 0) / 1e9:.0f} GB/s pageable. "
                   f"Load of every shard into the engine (after the HDF5 read; for the GPU the "
                   f"host-to-device copies and load-time structures; the CPU engine builds its "
                   f"structures lazily, in the first query): {loads}.")
        out.append("")
        out.append("| task | cpu1 | cpuN | gpu (init / trav) | raw-gpu | gpu vs cpu1 | "
                   "gpu vs raw-gpu | floor | gpu trav / floor | grammar GB/s | match |")
        out.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
        sp_cpu, sp_raw = [], []
        tasks = []
        for r in rows:
            if r["corpus"] == c and r["task"] not in tasks:
                tasks.append(r["task"])
        for t in tasks:
            by = {r["engine"]: r for r in rows if r["corpus"] == c and r["task"] == t}
            g, c1, cn, rg = by.get("gpu"), by.get("cpu1"), by.get("cpuN"), by.get("raw-gpu")
            match = all(r.get("match", True) for r in by.values())
            vs_cpu = c1["median_s"] / g["median_s"] if g and c1 else None
            vs_raw = rg["median_s"] / g["median_s"] if g and rg else None
            floor = g.get("floor_s") if g else None
            vs_floor = g["traversal_s"] / floor if g and floor else None
            achieved = (info["grammar_bytes"] / g["traversal_s"] / 1e9
                        if g and g["traversal_s"] > 0 else None)
            if vs_cpu:
                sp_cpu.append(vs_cpu)
            if vs_raw:
                sp_raw.append(vs_raw)
            gcol = (f"{fmt_s(g['median_s'])} ({fmt_s(g['init_s'])} / {fmt_s(g['traversal_s'])})"
                    if g else "–")
            out.append(
                f"| {t} | {fmt_s(c1['median_s']) if c1 else '–'} | "
                f"{fmt_s(cn['median_s']) if cn else '–'} | {gcol} | "
                f"{fmt_s(rg['median_s']) if rg else '–'} | "
                f"{f'{vs_cpu:.1f}x' if vs_cpu else '–'} | {f'{vs_raw:.2f}x' if vs_raw else '–'} | "
                f"{f'{floor * 1e6:.1f} µs' if floor else '–'} | "
                f"{f'{vs_floor:.0f}x' if vs_floor else '–'} | "
                f"{f'{achieved:.1f}' if achieved else '–'} | "
                f"{'yes' if match else '**NO**'} |")
        out.append("")

        def means(v):
            if not v:
                return "–"
            return (f"arithmetic {sum(v) / len(v):.1f}x, geometric "
                    f"{math.exp(sum(map(math.log, v)) / len(v)):.1f}x")

        out.append(f"GPU vs sequential CPU over the tasks: {means(sp_cpu)}. "
                   f"GPU vs raw-text GPU baseline: {means(sp_raw)}.")
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
