#!/usr/bin/python3
"""Distribution over launches of the CSV that gpu_bundle_run.sh mpi-bench writes.

  summarize_bundle.py cpu_mpi_all.csv [--markdown]

Each row of that file is one launch's figure (one round per launch), so the
launches of a (set, np, workload) give min / median / max. Prints hvd (out of
place), hvd in place, the best raw pattern (the fastest of raw MPI per
tensor, one call, 4 MiB and cache-sized pieces, each also in place, before
hvd_init) and the two ratios, each ratio taken within its own launch.
"""
import argparse
import collections
import csv
import statistics

SETS = {"W125": "private", "W125shm": "shared buffers", "W4": "private"}


def spread(values, fmt):
    if not values:
        return "-"
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args()
    # (set, np, workload) -> launch -> impl -> ms
    figures = collections.defaultdict(lambda: collections.defaultdict(dict))
    with open(args.csv, newline="") as f:
        for row in csv.DictReader(f):
            launch = (row.get("run", "1"), row["rep"])
            key = (row.get("set", "W125"), int(row["np"]), row["workload"])
            figures[key][launch][row["impl"]] = float(row["median_ms"])
    head = ["set", "np", "workload", "launches", "hvd ms", "hvd in place ms", "best raw ms",
            "hvd ÷ raw", "hvd in place ÷ raw"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(head) + "   (each: min/median/max over launches)")
    for key in sorted(figures, key=lambda k: (list(SETS).index(k[0]) if k[0] in SETS else 9,
                                              k[1], k[2])):
        launches = figures[key].values()
        col = {name: [lf[name] for lf in launches if name in lf]
               for name in ("hvd", "hvd, in place", "best raw MPI")}
        ratio = {name: [lf[name] / lf["best raw MPI"] for lf in launches
                        if name in lf and "best raw MPI" in lf]
                 for name in ("hvd", "hvd, in place")}
        cells = [f"{key[0]} ({SETS.get(key[0], '?')})", str(key[1]), key[2], str(len(launches)),
                 spread(col["hvd"], "{:.2f}"), spread(col["hvd, in place"], "{:.2f}"),
                 spread(col["best raw MPI"], "{:.2f}"), spread(ratio["hvd"], "{:.2f}"),
                 spread(ratio["hvd, in place"], "{:.2f}")]
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))


if __name__ == "__main__":
    main()
