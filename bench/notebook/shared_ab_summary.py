#!/usr/bin/python3
"""Summary of bench/notebook/shared_ab.sh's launches: per set and mode
(private buffers, --shared-buffers), hvd in place and the best raw pattern
(min / median / max over launches) and the ratio in each launch, median (max),
in blocks and paired.  Usage: shared_ab_summary.py OUT_DIR"""
import csv, glob, statistics, sys, os
d = sys.argv[1]
def load(path):
    out = {}
    for row in csv.DictReader(open(path)):
        out.setdefault(row["workload"], {})[row["impl"]] = float(row["median_ms"])
    return out
runs = {"private": [], "shared": []}
for mode in runs:
    for p in sorted(glob.glob(os.path.join(d, mode + "_*.csv"))):
        runs[mode].append(load(p))
sets = list(runs["private"][0].keys()) if runs["private"] else []
def fmt(v): return "%.3g / %.3g / %.3g" % (min(v), statistics.median(v), max(v))
print("set | mode | n | hvd in place blocks | best raw blocks (min of before/idle) | ratio med (max) | hvd paired | best raw paired | ratio med (max)")
for s in sets:
    for mode, rs in runs.items():
        hb, rb, hp, rp, qb, qp = [], [], [], [], [], []
        for r in rs:
            x = r.get(s)
            if not x: continue
            h = x["hvd, in place"]; raw = min(x["best raw MPI"], x.get("best raw MPI (hvd idle)", 1e9))
            hb.append(h); rb.append(raw); qb.append(h / raw)
            h2 = x["hvd, in place (paired)"]; r2 = x["best raw MPI (paired)"]
            hp.append(h2); rp.append(r2); qp.append(h2 / r2)
        if not hb: continue
        print("%s | %s | %d | %s | %s | %.2f (%.2f) | %s | %s | %.2f (%.2f)" % (s.split("/")[-1].replace("_grads.txt",""), mode, len(hb), fmt(hb), fmt(rb), statistics.median(qb), max(qb), fmt(hp), fmt(rp), statistics.median(qp), max(qp)))
