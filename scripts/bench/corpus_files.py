"""The files the benchmark corpora are built from (scripts/bench/e2e-bench.sh: `large`, `smallN`;
query-bench.sh: `textNNN`): the real source and documentation files under some directories.

The scripts run it from the repository's root as `PYTHONPATH=scripts/bench python3 - ...` and
take corpus_files(roots) in path order: every file once, so that a corpus is the same wherever
it is built from the same files.
"""
import os
import re
import stat

EXTS = {".py", ".pyi", ".h", ".hpp", ".c", ".cc", ".cpp", ".cxx", ".inl", ".cu", ".cuh", ".rst",
        ".txt", ".md", ".html", ".tex", ".pm", ".pl", ".cmake", ".sh", ".js", ".xml"}


def corpus_files(roots):
    """(path as bytes, size) of every readable regular file under `roots` (existing directories;
    one inside another is walked once, as its real path) with an extension of EXTS, between 1 byte
    and 2 MiB, and no blank or control character in its path; sorted by path, a file reached by
    several paths (hard links) kept at its first."""
    real = sorted({os.path.realpath(r) for r in roots if os.path.isdir(r)})
    real = [r for r in real if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in real)]
    found = []
    for root in real:
        for dirpath, _, filenames in os.walk(root):
            for f in filenames:
                if os.path.splitext(f)[1] not in EXTS:
                    continue
                p = os.path.join(dirpath, f)
                if re.search(r"[\s\x00-\x1f\x7f]", p):
                    continue
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and 0 < st.st_size < 2 * 1024 * 1024 and os.access(p, os.R_OK):
                    found.append((os.fsencode(p), st.st_size, (st.st_dev, st.st_ino)))
    found.sort()
    seen, files = set(), []
    for p, size, ino in found:
        if ino not in seen:
            seen.add(ino)
            files.append((p, size))
    return files
