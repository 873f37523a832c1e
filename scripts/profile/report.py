#!/usr/bin/env python3
# scripts/profile/report.py PROFILE [TOP]: a profile written by scripts/profile/sigprof.c, by
# function (binutils' addr2line, run where the profiled binaries are): samples by file, flat
# (the leaf's function), inclusive (any frame), and for the TOP leaves their callers (the first
# three frames outside the leaf's file). Functions of stripped libraries are named by the
# nearest exported symbol, or "?@file" where none is found.
import bisect, collections, subprocess, sys
lines = open(sys.argv[1]).read().split('\n')
top = int(sys.argv[2]) if len(sys.argv) > 2 else 60
i = lines.index('maps')
stacks = [[int(x, 16) for x in l.split()] for l in lines[1:i] if l.strip()]
maps = []
for l in lines[i+1:]:
    p = l.split()
    if len(p) < 6 or 'x' not in p[1]: continue
    lo, hi = (int(x, 16) for x in p[0].split('-'))
    maps.append((lo, hi, int(p[2], 16), p[5]))
maps.sort()
starts = [m[0] for m in maps]
def where(a):
    k = bisect.bisect_right(starts, a) - 1
    if k >= 0 and maps[k][0] <= a < maps[k][1]: return maps[k][3], a - maps[k][0] + maps[k][2]
    return '?', a
byfile = collections.defaultdict(set)
for s in stacks:
    for j, a in enumerate(s):
        f, off = where(a if j == 0 else a - 1)
        byfile[f].add(off)
names = {}
for f, offs in byfile.items():
    offs = sorted(offs)
    if f.startswith('/') :
        for c in range(0, len(offs), 5000):
            chunk = offs[c:c+5000]
            try:
                out = subprocess.run(['addr2line', '-f', '-C', '-e', f] + [hex(o) for o in chunk], capture_output=True, text=True).stdout.split('\n')
            except Exception: out = []
            for k, o in enumerate(chunk):
                fn = out[2*k] if 2*k < len(out) else '??'
                if fn == '??': fn = '?@' + f.split('/')[-1]
                names[(f, o)] = fn[:110]
def name(a, j):
    f, off = where(a if j == 0 else a - 1)
    return names.get((f, off), '?@' + f.split('/')[-1])
flat = collections.Counter(); incl = collections.Counter(); files = collections.Counter()
for s in stacks:
    flat[name(s[0], 0)] += 1
    files[where(s[0])[0].split('/')[-1]] += 1
    seen = set()
    for j, a in enumerate(s):
        n = name(a, j)
        if n not in seen: incl[n] += 1; seen.add(n)
N = len(stacks)
print(f'{N} samples')
print('== by file'); [print(f'{c*100/N:6.2f}% {k}') for k, c in files.most_common(15)]
print('== flat'); [print(f'{c*100/N:6.2f}% {k}') for k, c in flat.most_common(top)]
print('== inclusive'); [print(f'{c*100/N:6.2f}% {k}') for k, c in incl.most_common(top)]

print('== callers of the top leaves (first frame outside the leaf\'s file)')
for leaf, c in flat.most_common(12):
    callers = collections.Counter()
    for s_ in stacks:
        if name(s_[0], 0) != leaf: continue
        lf = where(s_[0])[0]
        chain = [name(a, j) for j, a in enumerate(s_[1:], 1) if where(a - 1)[0] != lf]
        callers[' < '.join(x[:60] for x in chain[:3]) or '-'] += 1
    print(f'{c*100/N:6.2f}% {leaf}')
    for k, v in callers.most_common(6): print(f'        {v*100/N:6.2f}% {k}')
