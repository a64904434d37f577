#!/usr/bin/python3
"""Plot hvd_bench CSV files (workload,impl,median_ms,busbw_gbs,ratio) as a PNG.

Usage: plot_bench.py OUT.png LABEL=FILE.csv [LABEL=FILE.csv ...]

One panel per workload, one bar per implementation, median ms on the bar;
several CSVs (e.g. the MPI and the Gloo run) go side by side.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render straight to the file
import matplotlib.pyplot as plt  # noqa: E402


def load(specs):
    rows = []
    for spec in specs:
        label, path = spec.split("=", 1)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                rows.append((r["workload"], f"{label}: {r['impl']}", float(r["median_ms"])))
    return rows


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    rows = load(argv[2:])
    workloads = list(dict.fromkeys(w for w, _, _ in rows))
    fig, axes = plt.subplots(1, len(workloads), figsize=(4 * len(workloads), 4.5), squeeze=False)
    for ax, wl in zip(axes[0], workloads):
        mine = [(impl, ms) for w, impl, ms in rows if w == wl]
        names = [impl for impl, _ in mine]
        values = [ms for _, ms in mine]
        colors = ["tab:blue" if "hvd" in n.split(": ")[1] else "tab:gray" for n in names]
        bars = ax.barh(range(len(mine)), values, color=colors)
        ax.set_yticks(range(len(mine)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(wl)
        ax.set_xlabel("median ms per iteration (lower is better)")
        for bar, v in zip(bars, values):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {v:.3g}",
                    va="center", fontsize=8)
    fig.suptitle("hvd_bench, np=2 (blue: hvd, grey: raw baselines)")
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
