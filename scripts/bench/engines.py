#!/usr/bin/env python3
"""Engine benchmark: every task x engine over real corpora, with time split into load, init and
traversal (from `gtadoc run --stats`), the traversal the selector chose and what the forced
alternatives cost, and a byte-for-byte check of every output against the raw-text reference.

  scripts/bench/engines.py --corpus gcide=~/.cache/gtadoc/datasets/gcide --out docs/bench/cpu

Engines: cpu1 (gtadoc, CPU engine, 1 thread: the sequential TADOC baseline), cpuN (all
threads), gpu (when a GPU is visible), raw-cpu (the raw-text reference), raw-wc (hand-optimized
raw word counter; word-count only), raw-gpu (GreX-style raw GPU baseline, when built).
Writes OUT.json and OUT.md. Times are the best of --reps runs (wall, page cache warm).
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

TASKS = {
    "word-count": [],
    "sort": [],
    "inverted-index": [],
    "term-vector": [],
    "sequence-count": ["--n", "3"],
    "ranked-inverted-index": ["--n", "3"],
}


def run(cmd, stdout=None, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return dt


def files_equal(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def corpus_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if os.path.isfile(p):
                total += os.path.getsize(p)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True, help="NAME=DIR (repeatable)")
    ap.add_argument("--build", default="build", help="build directory (gtadoc, tests/gtadoc_reference)")
    ap.add_argument("--engines", default="cpu1,cpuN,gpu,raw-cpu,raw-wc,raw-gpu")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--traversals", action="store_true", help="also force top-down and bottom-up (cpu1)")
    ap.add_argument("--work", default=None, help="scratch dir (archives are cached there)")
    ap.add_argument("--out", required=True, help="output path prefix (OUT.json, OUT.md)")
    args = ap.parse_args()

    gtadoc = os.path.join(args.build, "gtadoc")
    reference = os.path.join(args.build, "tests", "gtadoc_reference")
    raw_wc = os.path.join(args.build, "scripts", "bench", "raw_wordcount")
    raw_gpu = os.path.join(args.build, "scripts", "bench", "raw_gpu")
    work = args.work or tempfile.mkdtemp(prefix="gtadoc-bench-")
    os.makedirs(work, exist_ok=True)
    engines = args.engines.split(",")
    gpu_ok = subprocess.run([gtadoc, "run", "--help"], stdout=subprocess.DEVNULL).returncode == 0 and \
        shutil.which("nvidia-smi") is not None and \
        subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    results = {"machine": {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
                           "cores": os.cpu_count(), "threads": args.threads},
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": []}
    for spec in args.corpus:
        name, path = spec.split("=", 1)
        path = os.path.expanduser(path)
        nbytes = corpus_bytes(path)
        archive = os.path.join(work, name + ".gtd")
        if not os.path.exists(os.path.join(archive, "manifest.h5")):
            run([gtadoc, "compress", path, "-o", archive, "--force"])
        print(f"corpus {name}: {nbytes} bytes", file=sys.stderr)
        for task in args.tasks.split(","):
            opts = TASKS[task]
            ref_out = os.path.join(work, f"{name}-{task}.ref")
            variants = []
            for e in engines:
                if e == "cpu1":
                    variants.append(("cpu1", ["--engine", "cpu", "--threads", "1"]))
                    if args.traversals:
                        for t in ("top-down", "bottom-up"):
                            variants.append((f"cpu1-{t}", ["--engine", "cpu", "--threads", "1", "--traversal", t]))
                elif e == "cpuN":
                    variants.append(("cpuN", ["--engine", "cpu", "--threads", str(args.threads)]))
                elif e == "gpu" and gpu_ok:
                    variants.append(("gpu", ["--engine", "gpu"]))
                    if args.traversals:
                        for t in ("top-down", "bottom-up"):
                            variants.append((f"gpu-{t}", ["--engine", "gpu", "--traversal", t]))
            have_ref = False
            if "raw-cpu" in engines:
                best = min(run([reference, path, task] + opts, stdout=open(ref_out, "wb")) for _ in range(args.reps))
                have_ref = True
                results["rows"].append({"corpus": name, "bytes": nbytes, "task": task, "engine": "raw-cpu",
                                        "total_s": best, "match": True})
                print(f"  {task:22s} raw-cpu {best:8.3f}s", file=sys.stderr)
            if "raw-wc" in engines and task == "word-count" and os.path.exists(raw_wc):
                out = os.path.join(work, "raw-wc.out")
                best = min(run([raw_wc, "--threads", "1", path], stdout=open(out, "wb")) for _ in range(args.reps))
                match = files_equal(out, ref_out) if have_ref else None
                results["rows"].append({"corpus": name, "bytes": nbytes, "task": task, "engine": "raw-wc",
                                        "total_s": best, "match": match})
                print(f"  {task:22s} raw-wc  {best:8.3f}s match={match}", file=sys.stderr)
            if "raw-gpu" in engines and gpu_ok and os.path.exists(raw_gpu):
                out = os.path.join(work, "raw-gpu.out")
                best = min(run([raw_gpu, path, task] + opts, stdout=open(out, "wb")) for _ in range(args.reps))
                match = files_equal(out, ref_out) if have_ref else None
                results["rows"].append({"corpus": name, "bytes": nbytes, "task": task, "engine": "raw-gpu",
                                        "total_s": best, "match": match})
                print(f"  {task:22s} raw-gpu {best:8.3f}s match={match}", file=sys.stderr)
            for label, eopts in variants:
                out = os.path.join(work, "run.out")
                stats_path = os.path.join(work, "stats.json")
                best, best_stats = None, None
                for _ in range(args.reps):
                    dt = run([gtadoc, "run", archive, task] + opts + eopts +
                             ["-o", out, "--force", "--stats", stats_path])
                    if best is None or dt < best:
                        best = dt
                        with open(stats_path) as f:
                            best_stats = json.load(f)
                match = files_equal(out, ref_out) if have_ref else None
                row = {"corpus": name, "bytes": nbytes, "task": task, "engine": label, "wall_s": best,
                       "match": match}
                row.update({k: best_stats[k] for k in best_stats if k.endswith("_s")})
                row["traversal"] = (best_stats.get("rank0_traversals") or [""])[0].split(":")[0]
                results["rows"].append(row)
                print(f"  {task:22s} {label:14s} {best:8.3f}s (load {row['load_s']:.3f} init {row['init_s']:.3f} "
                      f"trav {row['traversal_s']:.3f}) {row['traversal']} match={match}", file=sys.stderr)
            save(results, args.out)  # after every task, so a cut-off run keeps what it measured
    save(results, args.out)
    print(f"wrote {args.out}.json and {args.out}.md", file=sys.stderr)


def save(results, out):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(results, f, indent=2)
    with open(out + ".md", "w") as f:
        f.write(render_markdown(results))


def render_markdown(results):
    m = results["machine"]
    lines = [f"Machine: {m['host']} ({m['cores']} cores), {results['date']}. Best of runs, wall seconds; "
             "`load`/`init`/`trav` from `gtadoc run --stats`; `match` = output equals the raw-text reference.", "",
             "| corpus | task | engine | wall s | load s | init s | traversal s | traversal | MB/s | match |",
             "|---|---|---|---:|---:|---:|---:|---|---:|---|"]
    for r in results["rows"]:
        wall = r.get("wall_s", r.get("total_s"))
        mbps = r["bytes"] / 1e6 / wall if wall else 0
        lines.append(f"| {r['corpus']} | {r['task']} | {r['engine']} | {wall:.3f} | "
                     f"{r.get('load_s', float('nan')):.3f} | {r.get('init_s', float('nan')):.3f} | "
                     f"{r.get('traversal_s', float('nan')):.3f} | {r.get('traversal', '')} | {mbps:.0f} | "
                     f"{r.get('match')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
