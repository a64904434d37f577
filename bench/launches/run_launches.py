#!/usr/bin/python3
"""run_launches: the issue-32 measurement. N launches (default 20) at np=2 under
mpirun (or, for the C API, hvdrun: --launcher hvdrun --what c), alternating
  (a) hvd's C API: build/bin/hvd_bench on the large sets (--iters/--warmup
      given here) and, in a second mpirun, on W4 (its default 5+50
      iterations), raw MPI patterns before hvd_init and with hvd idle in the
      same launch;
  (b) Python: bench/python/launch_bench.py through hvd.torch (or
      --module horovod.torch) on the same sets and W4, with mpi4py's raw
      patterns (per tensor, one call, 4 MiB chunks, in place on the same
      contiguous buffer) before init and with the binding idle;
then prints, per set, the distribution over launches (min / median / max)
of hvd and of the best raw pattern side by side, the per-launch ratio
hvd / best raw of the same launch (the faster of before-init and hvd-idle),
hvd's spread max/min, raw's, and the goals of issue 32. --paired adds, for
both, hvd and the raw patterns timed in turn iteration by iteration;
--shared-buffers puts the buffers in hvd_alloc_shared memory (the C API
runs', and hvd.torch's through hvd.shared_zeros); --huge-pages in
transparent huge pages (madvise), as numpy's large arrays are.

    /usr/bin/python3 bench/launches/run_launches.py [-n 20] [--budget-min 25]
    /usr/bin/python3 bench/launches/run_launches.py --summarize OUT_DIR

Every launch's CSV stays in OUT_DIR (default bench-launches-<UTC time> under
/tmp), with launches.log (commands, times, load average).
"""
import argparse
import csv
import datetime
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHAPES = os.path.join(ROOT, "tools", "hvd_bench", "shapes")
NEW_SETS = ["mobilenet_v3_large", "efficientnet_b0", "convnext_tiny"]
LARGE = ["W1", "W2", "W2b", "W5", "W6"] + [os.path.join(SHAPES, n + "_grads.txt")
                                          for n in NEW_SETS]
LABEL = {"W1": "W1 (64 MiB)", "W2": "W2 ResNet-50", "W2b": "W2b VGG-16", "W4": "W4 1000x1KiB",
         "W5": "W5 Inception-v3", "W6": "W6 ResNet-101",
         "resnet50_grads": "W2 ResNet-50", "vgg16_grads": "W2b VGG-16",
         "inception_v3_grads": "W5 Inception-v3", "resnet101_grads": "W6 ResNet-101"}
# Goals of issue 32.
RATIO_EVERY, RATIO_MEDIAN, SPREAD, RAW_SPREAD = 1.10, 0.90, 1.5, 1.3
W4_GOAL_MS = {"C": 0.5, "torch": 1.5}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def set_key(workload):
    """hvd_bench names a shape-file workload after the file; launch_bench too."""
    return LABEL.get(workload, workload.replace("_grads", ""))


def read_csv(path):
    """{set: {impl: median_ms}} from one launch's CSV (hvd_bench's columns)."""
    out = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if "WRONG" in row["impl"]:
                raise SystemExit("run_launches: %s: wrong result: %s %s"
                                 % (path, row["workload"], row["impl"]))
            out.setdefault(set_key(row["workload"]), {})[row["impl"]] = float(row["median_ms"])
    return out


CPU_FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


def cpu_times():
    """The host's CPU time by kind (/proc/stat): steal is time the hypervisor
    gave our virtual cores to someone else, the one cause outside the VM."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:1 + len(CPU_FIELDS)]]
    return dict(zip(CPU_FIELDS, vals))


def cpu_shares(before, after):
    d = {k: after[k] - before[k] for k in CPU_FIELDS}
    total = sum(d.values()) or 1
    return {k: 100.0 * v / total for k, v in d.items()}


def perf_wrap(cmd, out, tag):
    """Each rank under `perf stat` (software events: this VM has no hardware
    counters), one file per rank, so a slow launch can be set beside a fast one."""
    events = "task-clock,context-switches,cpu-migrations,page-faults"
    dest = os.path.join(out, "perf_%s.rank" % tag)
    return ["sh", "-c", 'exec perf stat -x, -e %s -o "%s${OMPI_COMM_WORLD_RANK:-$HVD_RANK}" -- "$@"'
            % (events, dest), "sh"] + cmd


class Runner:
    def __init__(self, args):
        self.args = args
        self.log = open(os.path.join(args.out, "launches.log"), "a")
        self.env = dict(os.environ)
        pkg = os.path.join(os.path.abspath(args.build), "python")
        extra = [args.pythonpath] if args.pythonpath else []
        if args.module.startswith("hvd"):
            extra.append(pkg)
        if extra:
            self.env["PYTHONPATH"] = os.pathsep.join(
                extra + ([self.env["PYTHONPATH"]] if self.env.get("PYTHONPATH") else []))
        self.env.setdefault("OMP_NUM_THREADS", "1")

    def run(self, cmd, tag):
        cpu0 = cpu_times()
        t0 = time.time()
        line = "%s %s load=%s + %s" % (
            datetime.datetime.utcnow().strftime("%H:%M:%S"), tag,
            open("/proc/loadavg").read().split()[0], " ".join(shlex.quote(c) for c in cmd))
        print(line, file=sys.stderr, flush=True)
        self.log.write(line + "\n")
        path = os.path.join(self.args.out, tag + ".out")
        with open(path, "w") as f:  # streamed: `tail -f` shows the launch's progress
            p = subprocess.run(cmd, env=self.env, stdout=f, stderr=subprocess.STDOUT,
                               timeout=self.args.launch_timeout)
        dt = time.time() - t0
        shares = cpu_shares(cpu0, cpu_times())
        self.log.write("  exit %d after %.1f s; cpu %s\n" % (
            p.returncode, dt, " ".join("%s=%.1f%%" % kv for kv in shares.items())))
        with open(os.path.join(self.args.out, "cpu.csv"), "a") as f:
            f.write("%s,%.1f,%s\n" % (tag, dt, ",".join("%.2f" % v for v in shares.values())))
        self.log.flush()
        if p.returncode != 0:
            with open(path) as f:
                sys.stderr.write(f.read()[-3000:])
            raise SystemExit("run_launches: %s failed (exit %d); output in %s" % (
                tag, p.returncode, path))
        return dt

    def c_api(self, i):
        a, out = self.args, self.args.out
        bench = os.path.join(a.build, "bin", "hvd_bench")
        common = (["--rounds", str(a.rounds)] + (["--shared-buffers"] if a.shared_buffers else [])
                  + (["--huge-pages"] if a.huge_pages else []))
        wrap = (lambda c, t: perf_wrap(c, out, t)) if a.perf else (lambda c, t: c)
        launcher = (MPIRUN if a.launcher == "mpirun" else
                    [os.path.join(a.build, "bin", "hvdrun"), "-np", "2"])
        big = launcher + wrap([bench, "--workloads", ",".join(a.large), "--iters", str(a.iters),
                             "--warmup", str(a.warmup), "--csv", os.path.join(out, "c_%02d.csv" % i)]
                            + common + (["--paired"] if a.paired else []), "c_%02d" % i)
        small = launcher + wrap([bench, "--workloads", "W4", "--csv",
                               os.path.join(out, "c_w4_%02d.csv" % i)] + common, "c_w4_%02d" % i)
        return self.run(big, "c_%02d" % i) + self.run(small, "c_w4_%02d" % i)

    def python(self, i):
        a = self.args
        cmd = MPIRUN + ["-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS", "/usr/bin/python3",
                        os.path.join(ROOT, "bench", "python", "launch_bench.py"),
                        "--module", a.module, "--sets", ",".join(a.large + ["W4"]),
                        "--rounds", str(a.rounds), "--iters", str(a.iters),
                        "--warmup", str(a.warmup),
                        "--csv", os.path.join(a.out, "torch_%02d.csv" % i)]
        if a.big_iters:
            cmd += ["--big-iters", str(a.big_iters)]
        if a.paired:
            cmd.append("--paired")
        if a.shared_buffers and a.module == "hvd.torch":
            cmd.append("--shared-buffers")
        if a.huge_pages:
            cmd.append("--huge-pages")
        return self.run(cmd, "torch_%02d" % i)


def launches(args):
    os.makedirs(args.out, exist_ok=True)
    r = Runner(args)
    start = time.time()
    budget = args.budget_min * 60 if args.budget_min else None
    done = 0
    for i in range(args.n):
        if budget and i > 0:
            per = (time.time() - start) / i
            if time.time() - start + per > budget:
                print("run_launches: time budget (%.0f min) reached after %d launches"
                      % (args.budget_min, i), file=sys.stderr)
                break
        if args.what in ("both", "c"):  # (a) then (b), launch after launch
            r.c_api(i)
        if args.what in ("both", "torch"):
            r.python(i)
        done = i + 1
        el = time.time() - start
        print("run_launches: launch %d/%d done, %.0f s elapsed, about %.0f s to go"
              % (done, args.n, el, el / done * (args.n - done)), file=sys.stderr, flush=True)
    print("run_launches: %d launches in %.1f min; CSVs in %s"
          % (done, (time.time() - start) / 60, args.out), file=sys.stderr)


def fmt(x):
    return "%.3f" % x if x < 10 else "%.1f" % x


def dist(values):
    return "%s / %s / %s" % (fmt(min(values)), fmt(statistics.median(values)), fmt(max(values)))


def summarize_tool(out, prefix, tool, per_launch, w4_prefix=None, impl="hvd", paired=False):
    """Per set: hvd (its row `impl`), best raw (same launch), ratio, spread
    over launches. `paired`: hvd_bench's '(paired)' rows, hvd and raw timed
    iteration by iteration in turn; otherwise those rows are left out."""
    files = sorted(f for f in os.listdir(out) if f.startswith(prefix) and f.endswith(".csv")
                   and (w4_prefix is None or not f.startswith(w4_prefix)))
    if not files:
        return []
    launches_ = []
    for f in files:
        data = read_csv(os.path.join(out, f))
        if w4_prefix:
            w4 = os.path.join(out, w4_prefix + f[len(prefix):])
            if os.path.exists(w4):
                data.update(read_csv(w4))
        launches_.append(data)
    sets = []
    for d in launches_:
        for s in d:
            if s not in sets:
                sets.append(s)
    failures = []
    print("\n%s: %d launches, np=2; ms per iteration, min / median / max over launches"
          % (tool, len(launches_)))
    hdr = "%-22s %-24s %-24s %-24s %-13s %-13s %-8s %-8s %-9s %-9s %s" % (
        "set", "hvd", "best raw (same launch)", "raw before init", "ratio max", "ratio median",
        "hvd max/min", "raw max/min", "idle/bef.", "over", "goals")
    print(hdr)
    print("-" * len(hdr))
    for s in sets:
        hvd, best, before, ratios, idle_ratio, raw_self = [], [], [], [], [], []
        for d in launches_:
            rows = d.get(s, {})
            if impl not in rows:
                continue
            best_rows = {k: v for k, v in rows.items()
                         if k.startswith("best raw") and ("(paired)" in k) == paired}
            raw_b = [v for k, v in best_rows.items() if "idle" not in k]
            raw_i = [v for k, v in best_rows.items() if "idle" in k]
            hvd.append(rows[impl])
            if raw_b:
                b = min(raw_b + raw_i)
                best.append(b)
                before.append(raw_b[0])
                ratios.append(rows[impl] / b)
                if raw_i:
                    idle_ratio.append(raw_i[0] / raw_b[0])
                    # The null control: raw MPI's two rounds of one launch
                    # against each other, as hvd is held against them.
                    raw_self.append(max(raw_i[0], raw_b[0]) / min(raw_i[0], raw_b[0]))
        if not hvd:
            continue
        goals = []
        is_w4 = s.startswith("W4")
        if is_w4:
            lim = W4_GOAL_MS[tool.split()[0]]
            goals.append(("every launch <= %.1f ms" % lim, max(hvd) <= lim))
            over = "%d/%d" % (sum(h > lim for h in hvd), sum(b > lim for b in best))
        else:
            over = "%d/%s" % (sum(r > RATIO_EVERY for r in ratios),
                              sum(r > RATIO_EVERY for r in raw_self) if raw_self else "-")
        if ratios and not is_w4:
            goals.append(("ratio <= %.2fx every launch" % RATIO_EVERY, max(ratios) <= RATIO_EVERY))
            goals.append(("median ratio <= %.2fx" % RATIO_MEDIAN,
                          statistics.median(ratios) <= RATIO_MEDIAN))
        spread = max(hvd) / min(hvd)
        raw_spread = max(before) / min(before) if before else None
        note = ""
        if len(hvd) > 1 and not is_w4:
            if raw_spread is not None and raw_spread > RAW_SPREAD:
                note = " (spread goal n/a: raw spread > %.1fx)" % RAW_SPREAD
            else:
                goals.append(("spread <= %.1fx" % SPREAD, spread <= SPREAD))
        verdict = ("ok" if all(g for _, g in goals) else
                   "MISS: " + "; ".join(n for n, g in goals if not g)) + note
        for k, (h, b, ra) in enumerate(zip(hvd, best, ratios)):
            per_launch.append("%s,%s,%s,%d,%.6f,%.6f,%.4f" % (
                tool.split()[0], impl.replace(",", ""), s, k, h, b, ra))
        for name, good in goals:
            if not good:
                failures.append("%s %s: %s" % (tool, s, name))
        print("%-22s %-24s %-24s %-24s %-13s %-13s %-11s %-11s %-9s %-9s %s" % (
            s[:22], dist(hvd), dist(best) if best else "-", dist(before) if before else "-",
            "%.2fx" % max(ratios) if ratios else "-",
            "%.2fx" % statistics.median(ratios) if ratios else "-",
            "%.2fx" % spread, "%.2fx" % raw_spread if raw_spread else "-",
            "%.2fx" % max(idle_ratio) if idle_ratio else "-", over, verdict))
    return failures


def summarize(out):
    print("run_launches summary of %s" % out)
    print("ratio = hvd / the best raw MPI pattern of the same launch (fastest of its raw "
          "rounds before init and with hvd idle); idle/bef. = worst launch's best raw with hvd "
          "idle / before init (an idle hvd must not slow MPI); raw max/min = spread of raw "
          "before init (the spread goal counts where it is within 1.3x); over = launches past "
          "the goal, hvd / raw: past 1.10x, raw's two rounds of a launch against each other "
          "(the null control: raw MPI held to the same test); on W4, raw's best over the time goal")
    per_launch = ["tool,impl,set,launch,hvd_ms,best_raw_ms,ratio"]
    # hvd_bench times hvd from input to output ("hvd") and, as the raw
    # patterns also run, in place on the output ("hvd, in place"): each
    # against the best raw pattern, which is usually an in-place one.
    fails = summarize_tool(out, "c_", "C API (hvd_bench, in place)", per_launch,
                           w4_prefix="c_w4_", impl="hvd, in place")
    fails += summarize_tool(out, "c_", "C API (hvd_bench, out of place)", per_launch,
                            w4_prefix="c_w4_")
    # With --paired: hvd in place and the in-place raw patterns iteration by
    # iteration, in turn ("raw before init" is then the paired raw).
    fails += summarize_tool(out, "c_", "C API (hvd_bench --paired, in place)", per_launch,
                            w4_prefix="c_w4_", impl="hvd, in place (paired)", paired=True)
    fails += summarize_tool(out, "torch_", "torch (launch_bench.py)", per_launch)
    fails += summarize_tool(out, "torch_", "torch (launch_bench.py --paired)", per_launch,
                            impl="hvd (paired)", paired=True)
    with open(os.path.join(out, "per_launch.csv"), "w") as f:
        f.write("\n".join(per_launch) + "\n")
    print("\nper launch: %s" % os.path.join(out, "per_launch.csv"))
    print("\n%s" % ("all goals met" if not fails else "goals missed:\n  " + "\n  ".join(fails)))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=20, help="launches (default %(default)s)")
    p.add_argument("--budget-min", type=float, default=30,
                   help="start no launch that would end past this many minutes (0: none; "
                        "default %(default)s)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="hvd's build directory")
    p.add_argument("--sets", help="comma-separated large sets (default W1,W2,W2b,W5,W6 and "
                   "the shape files of %s); W4 always runs" % ", ".join(NEW_SETS))
    p.add_argument("--rounds", type=int, default=1, help="rounds per launch (default 1)")
    p.add_argument("--iters", type=int, default=5, help="timed iterations of the large sets")
    p.add_argument("--warmup", type=int, default=1, help="warm-up iterations of the large sets")
    p.add_argument("--big-iters", type=int, default=0,
                   help="timed iterations of sets over 256 MiB in the Python run (0: --iters)")
    p.add_argument("--module", default="hvd.torch",
                   help="Python binding: hvd.torch (default) or horovod.torch")
    p.add_argument("--pythonpath", help="prepended to PYTHONPATH for the Python run "
                   "(e.g. /work/horovod-install with --module horovod.torch)")
    p.add_argument("--paired", action="store_true",
                   help="hvd_bench --paired and launch_bench.py --paired on the large sets: hvd "
                        "and the raw patterns also timed iteration by iteration, in turn (a "
                        "third table, and a second for torch)")
    p.add_argument("--shared-buffers", action="store_true",
                   help="hvd_bench and launch_bench.py (hvd.torch) --shared-buffers: the "
                        "buffers (hvd's and the raw patterns') from hvd_alloc_shared")
    p.add_argument("--huge-pages", action="store_true",
                   help="hvd_bench and launch_bench.py --huge-pages: every buffer in transparent "
                        "huge pages where the kernel grants them (madvise), as numpy's are")
    p.add_argument("--perf", action="store_true",
                   help="run each hvd_bench rank under perf stat (OUT_DIR/perf_*.rankN)")
    p.add_argument("--what", choices=["both", "c", "torch"], default="both")
    p.add_argument("--launcher", choices=["mpirun", "hvdrun"], default="mpirun",
                   help="launcher of the C API runs: mpirun (MPI, raw MPI patterns) or hvdrun "
                        "(Gloo, raw Gloo patterns); the Python run always uses mpirun")
    p.add_argument("--launch-timeout", type=int, default=900, help="seconds per mpirun")
    p.add_argument("--out", help="output directory (default /tmp/bench-launches-<time>)")
    p.add_argument("--summarize", metavar="OUT_DIR", help="only summarize a finished run")
    args = p.parse_args()
    if args.summarize:
        return summarize(args.summarize)
    args.large = args.sets.split(",") if args.sets else LARGE
    args.out = args.out or "/tmp/bench-launches-" + \
        datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%S")
    launches(args)
    return summarize(args.out)


if __name__ == "__main__":
    sys.exit(main())
