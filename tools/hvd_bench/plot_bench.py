#!/usr/bin/python3
"""Plot hvd's ratio to the best raw pattern per workload from hvd_bench CSVs.

Usage: plot_bench.py OUT.png LABEL=FILE.csv [LABEL=FILE.csv ...]

Each CSV is one hvd_bench run (hvd_bench --csv FILE), e.g. MPI=mpi.csv
Gloo=gloo.csv. One bar group per workload, one bar per run side by side:
hvd's median time / the best raw median before hvd_init (the
ratio_to_best_raw column of the "hvd" row), with the range over rounds as
an error bar. A line marks 1.0 (as fast as the best raw pattern) and a
dashed mark over each bar the goal of issue 13 for that backend and
workload, where the goal is a ratio; W3 and W4 have goals in time, shown
under their names and compared with the time printed on the bar.
Needs Debian's python3-matplotlib.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render straight to the file
import matplotlib.pyplot as plt  # noqa: E402

# Goals at default settings, np=2 (issue 13): ratio to the best raw pattern.
RATIO_GOALS = {
    "MPI": {"W1": 1.05, "W2": 1.10, "W2b": 1.05, "W5": 1.10, "W6": 1.10},
    "Gloo": {"W1": 1.10, "W2": 1.10, "W5": 1.10},
}
# Goals in time (ms per iteration), whatever the backend.
TIME_GOALS_MS = {"W3": 0.030, "W4": 0.5}
NAMES = {"W2": "W2 ResNet-50", "W2b": "W2b VGG-16", "W5": "W5 Inception-v3",
         "W6": "W6 ResNet-101"}


def load(path):
    """Returns (backend, {workload: (ratio, lo, hi, hvd_ms)}, workload order)."""
    backend, best, hvd, order = None, {}, {}, []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            wl, impl = r["workload"], r["impl"]
            if wl not in order:
                order.append(wl)
            if impl.startswith("best raw ") and not impl.endswith("(hvd idle)"):
                backend = impl[len("best raw "):]
                best[wl] = float(r["median_ms"])
            elif impl == "hvd":
                hvd[wl] = (float(r["median_ms"]), float(r["min_ms"]), float(r["max_ms"]))
    out = {}
    for wl, (med, lo, hi) in hvd.items():
        if wl in best and best[wl] > 0:
            b = best[wl]
            out[wl] = (med / b, lo / b, hi / b, med)
    return backend, out, order


def format_ms(ms):
    return f"{ms * 1000:.0f} µs" if ms < 1 else f"{ms:.3g} ms"


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__)
    runs, workloads = [], []
    for spec in argv[2:]:
        label, path = spec.split("=", 1)
        backend, ratios, order = load(path)
        if not ratios:
            sys.exit(f"plot_bench.py: {path} has no hvd row with a best raw figure "
                     "(was it run with --no-raw?)")
        runs.append((label, backend, ratios))
        workloads += [w for w in order if w not in workloads and w in ratios]

    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(workloads) * max(1, len(runs) / 2)), 5))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
    top = 1.0
    for k, (label, backend, ratios) in enumerate(runs):
        xs, ys, errs = [], [], [[], []]
        for i, wl in enumerate(workloads):
            if wl not in ratios:
                continue
            ratio, lo, hi, ms = ratios[wl]
            x = i - 0.4 + width * (k + 0.5)
            xs.append(x)
            ys.append(ratio)
            errs[0].append(max(0.0, ratio - lo))
            errs[1].append(max(0.0, hi - ratio))
            top = max(top, hi)
            ax.text(x, hi, f"{ratio:.2f}x\n{format_ms(ms)}", ha="center", va="bottom",
                    fontsize=7)
            goal = RATIO_GOALS.get(backend or "", {}).get(wl)
            if goal is not None:
                ax.hlines(goal, x - width / 2, x + width / 2, colors="black",
                          linestyles="dashed", linewidth=1.2)
        ax.bar(xs, ys, width * 0.9, yerr=errs, capsize=3, color=colors[k % len(colors)],
               label=f"{label} (vs best raw {backend})")
    ax.axhline(1.0, color="gray", linewidth=1)
    ax.plot([], [], color="black", linestyle="dashed", label="goal (issue 13)")
    ticks = []
    for wl in workloads:
        name = NAMES.get(wl, wl)
        if wl in TIME_GOALS_MS:
            name += f"\n(goal ≤ {format_ms(TIME_GOALS_MS[wl])})"
        ticks.append(name)
    ax.set_xticks(range(len(workloads)), ticks, fontsize=8)
    ax.set_ylabel("hvd time / best raw time (lower is better)")
    if top > 8:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, top * 1.25)
    ax.set_title("hvd / best raw pattern, same launch (median over rounds; error bar: range)",
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
