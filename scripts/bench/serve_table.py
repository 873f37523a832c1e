#!/usr/bin/env python3
"""Markdown table of scripts/bench/serve-bench.sh rows (serve-bench.jsonl): per configuration and
task, the service's latency (uncached, cached, 64 concurrent clients; p50/p99 in ms), a fresh
`gtadoc run` of the same query, the server-side time of the last uncached response
(Server-Timing: traversal + collect + shuffle + rows + render) and the ratios."""
import json
import re
import sys


def server_ms(timing):
    total = 0.0
    for name, dur in re.findall(r"(\w+);dur=([0-9.]+)", timing or ""):
        if name in ("init", "traversal", "collect", "shuffle", "rows", "render"):
            total += float(dur)
    return total


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    table = {}
    for r in rows:
        key = (r["config"], r["task"])
        table.setdefault(key, {"run": r["run_wall_s"], "match": r["match"], "bytes": r["bytes"]})
        table[key][r["mode"]] = r["load"] or {}
    print("| config | task | result bytes | uncached p50 / p99 ms | cached p50 / p99 ms | "
          "64 clients p50 / p99 ms | server-side ms | p50 / server-side | `gtadoc run` s | "
          "run / p50 | same bytes |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (cfg, task), v in table.items():
        def pp(mode):
            m = v.get(mode)
            if not m or not m.get("ok"):
                return "-"
            return f'{m["p50_ms"]:.2f} / {m["p99_ms"]:.2f}'
        un = v.get("uncached") or {}
        p50 = un.get("p50_ms") or 0
        srv = server_ms(un.get("server_timing"))
        run = v["run"]
        print(f'| {cfg} | {task} | {v["bytes"]:,} | {pp("uncached")} | {pp("cached")} | '
              f'{pp("concurrent64")} | {srv:.1f} | '
              f'{(p50 / srv if srv else 0):.2f} | {run if run is not None else "-"} | '
              f'{(run * 1000 / p50 if run and p50 else 0):.0f}x | {v["match"]} |')


if __name__ == "__main__":
    main()
