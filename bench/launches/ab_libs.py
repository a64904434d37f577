#!/usr/bin/python3
"""ab_libs: two ways of running hvd, launch by launch in turn (A B B A ...):
two builds of libhvd, or one build with environment variables set two ways,
or both. Each launch is `hvd_bench --paired --rounds 1` at np=2 under
mpirun (with --torch, bench/python/launch_bench.py --paired through
hvd.torch: one init for all the sets, as a training script has); prints,
per set, the paired ratio (hvd in place / best in-place raw pattern of the
same launch) as min / median / max over each way's launches.

    /usr/bin/python3 bench/launches/ab_libs.py --a OLD_LIBDIR --b build/capi -n 6
    /usr/bin/python3 bench/launches/ab_libs.py --env-a HVD_SHARED_MEMORY_MPI_ALLREDUCE=1 \
        --env-b HVD_SHARED_MEMORY_MPI_ALLREDUCE=0 -n 4

A library directory is put first on LD_LIBRARY_PATH (it wins over
hvd_bench's RUNPATH); without one, hvd_bench's own libhvd runs. Each
launch's CSV and output stay in --out.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys

from run_launches import LARGE, ROOT, read_csv

SETS = LARGE + ["W4"]


def launch(libdir, assignments, csv_path, args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    forward = []
    if libdir:
        env["LD_LIBRARY_PATH"] = os.path.abspath(libdir)
        forward += ["-x", "LD_LIBRARY_PATH"]
    for a in assignments or []:
        name, _, value = a.partition("=")
        env[name] = value
        forward += ["-x", name]
    if args.torch:
        env.update(PYTHONPATH=os.path.join(ROOT, "build", "python"), OMP_NUM_THREADS="1")
        forward += ["-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"]
        bench = ["/usr/bin/python3", os.path.join(ROOT, "bench", "python", "launch_bench.py"),
                 "--sets"]
    else:
        bench = [args.bench, "--workloads"]
    cmd = ["nice", "-n", "-10", "mpirun", "-np", "2", "--bind-to", "core"] + forward + bench + [
        ",".join(args.sets), "--rounds", "1", "--paired", "--csv", csv_path] + (
            ["--huge-pages"] if args.huge_pages else [])
    with open(csv_path[:-4] + ".txt", "w") as log:
        return subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


def ratios(csv_path):
    """{set: paired ratio} of one launch (read_csv stops on a wrong result)."""
    out = {}
    for name, rows in read_csv(csv_path).items():
        for impl in ("hvd, in place (paired)", "hvd (paired)"):  # hvd_bench's, launch_bench's
            if impl in rows:
                out[name] = rows[impl] / rows["best raw MPI (paired)"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--a", help="directory of build A's libhvd.so.1")
    p.add_argument("--b", help="directory of build B's libhvd.so.1")
    p.add_argument("--env-a", action="append", metavar="NAME=VALUE",
                   help="set for A's launches (repeatable)")
    p.add_argument("--env-b", action="append", metavar="NAME=VALUE",
                   help="set for B's launches (repeatable)")
    p.add_argument("-n", type=int, default=6, help="launches of each build")
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "bin", "hvd_bench"))
    p.add_argument("--torch", action="store_true",
                   help="through hvd.torch (launch_bench.py) instead of the C API")
    p.add_argument("--huge-pages", action="store_true",
                   help="every buffer in transparent huge pages (hvd_bench and launch_bench.py "
                        "--huge-pages), where the direct path may run")
    p.add_argument("--out", default="/tmp/ab_libs")
    args = p.parse_args()
    args.sets = args.sets.split(",")
    if (args.a, args.env_a) == (args.b, args.env_b):
        p.error("A and B are the same: give --a/--b, --env-a/--env-b or both")
    for a in (args.env_a or []) + (args.env_b or []):
        if "=" not in a:
            p.error("%r is not NAME=VALUE" % a)
    os.makedirs(args.out, exist_ok=True)
    got = collections.defaultdict(lambda: collections.defaultdict(list))
    for i in range(args.n):
        for which in ("ab" if i % 2 == 0 else "ba"):
            path = os.path.join(args.out, "%s.%d.csv" % (which, i + 1))
            if launch(getattr(args, which), getattr(args, "env_" + which), path, args) != 0:
                sys.exit("ab_libs: launch %s %d failed (see %s)" % (which, i + 1, path[:-4] + ".txt"))
            for name, r in ratios(path).items():
                got[name][which].append(r)
            print("launch %d of build %s done" % (i + 1, which.upper()), flush=True)

    def mmm(xs):  # ratios: two decimals, where run_launches.dist formats ms
        return "%.2f / %.2f / %.2f" % (min(xs), statistics.median(xs), max(xs))

    print("\n| set | A: min / median / max | B: min / median / max |\n|---|---|---|")
    for name, by in got.items():
        print("| %s | %s | %s |" % (name, mmm(by["a"]), mmm(by["b"])))
    print("\nratio: hvd in place / the best in-place raw MPI pattern, paired")


if __name__ == "__main__":
    main()
