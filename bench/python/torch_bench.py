#!/usr/bin/env python3
"""torch_bench: the workloads of shared/bench/WORKLOADS.md through hvd.torch,
next to hvd's C API (build/bin/hvd_bench) on the same tensors, in the same
session, and one DistributedOptimizer step (backward excluded).

One command, from the repository root (build in build/):

    /usr/bin/python3 bench/python/torch_bench.py

runs --repeat rounds; each round launches this script as the workers
(`mpirun -np 2`, or `hvdrun -np 2` with --launcher hvdrun) and then
`hvd_bench --in-place` on the same workloads, so the two alternate. It prints
one table: per workload the median over rounds of each side's per-iteration
median (ms, rank 0), the range over rounds, and the ratio hvd.torch / C API.

One iteration, as hvd_bench --in-place does it: every tensor of the
workload is a view into one float32 buffer (`--gap N` floats apart; 0:
adjacent), allreduce_async_(t, name, op=Sum) on each in file order, then
synchronize() on each. Inputs are rank+1; the first iteration's result is
checked exactly. Workloads of 1 MiB or more barrier before each iteration.

Optimizer step (--optimizer, on by default): the parameters of the
torch_digits model and of ResNet-50 (resnet50_grads.txt) with gradients in
place; one step is the hooks DistributedOptimizer registers (called in
backward order, as backward would) plus synchronize(): every gradient
submitted, reduced and written back. In the same launch, alternated
iteration by iteration (so load changes hit them alike): the same step with
op=Sum, and plain allreduce_async_(op=Sum) on the same gradient tensors
(hvd_bench's pattern through hvd.torch). Also compared with hvd_bench on the
same shapes with --gap 16 (separately allocated gradients are not adjacent;
Sum, a separate launch: hvd_bench has no Average), and shown next to the
wrapped SGD update alone.
"""
import argparse
import csv
import io
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(ROOT, "tools", "hvd_bench", "shapes")

# Named workloads: W3/W4 built in, the others from shape files.
SHAPE_FILES = {"W2": "resnet50_grads.txt", "W5": "inception_v3_grads.txt",
               "W6": "resnet101_grads.txt", "W2b": "vgg16_grads.txt"}
# Horovod 0.28.1 (MPI, defaults) through the same Python pattern, measured
# 2026-11-23 on this kind of machine (issue 20); Horovod is not installable
# here (no PyPI), so these are quoted, not rerun.
HOROVOD_MS = {"W3": 4.27, "W4": 7.34, "W2": 72.4, "W5": 76.4, "W6": 128.3, "W2b": 340.7}
GOAL = {"W3": "<= 0.040 ms", "W4": "<= 2 ms"}
DIGITS = [(128, 64), (128,), (10, 128), (10,)]  # examples/python/torch_digits.py


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                shapes.append(tuple(int(d) for d in line))
    if not shapes:
        raise SystemExit("torch_bench: no tensors in %s" % path)
    return shapes


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def defaults_for(name, nbytes):
    """hvd_bench's iteration counts, so both sides time the same way."""
    fixed = {"W1": (3, 20), "W2": (3, 20), "W2b": (1, 5), "W3": (50, 1000), "W4": (5, 50)}
    if name in fixed:
        return fixed[name]
    return (1, 5) if nbytes > (256 << 20) else (3, 20) if nbytes > (8 << 20) else (3, 50)


# ------------------------------------------------------------------ worker

def worker(args):
    import torch
    import hvd.torch as hvd

    torch.set_num_threads(1)
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    rows = []

    def emit(workload, impl, ms, ok=True):
        rows.append((workload, impl, ms, ok))

    for wl in args.workload_specs:
        name, shapes = wl
        counts = [numel(s) for s in shapes]
        total = sum(counts) + args.gap * len(counts)
        warmup, iters = defaults_for(name, 4 * sum(counts))
        warmup = args.warmup if args.warmup is not None else warmup
        iters = args.iters if args.iters is not None else iters
        buf = torch.full((total,), float(r + 1))
        views, off = [], 0
        for c, s in zip(counts, shapes):
            views.append(buf.narrow(0, off, c).view(s))
            off += c + args.gap
        names = ["%s.%d" % (name, i) for i in range(len(views))]
        align = 4 * sum(counts) >= (1 << 20)
        allreduce_async_, synchronize, Sum = hvd.allreduce_async_, hvd.synchronize, hvd.Sum
        times, ok = [], True
        hvd.barrier()
        for it in range(warmup + iters):
            if align:
                hvd.barrier()
            t0 = time.perf_counter()
            handles = [allreduce_async_(v, name=nm, op=Sum) for v, nm in zip(views, names)]
            for h in handles:
                synchronize(h)
            t1 = time.perf_counter()
            if it == 0:
                ok = all(bool((v == n * (n + 1) / 2).all()) for v in views)
            if it >= warmup:
                times.append((t1 - t0) * 1e3)
        emit(name, "hvd.torch", statistics.median(times), ok)

    if args.optimizer:
        for label, shapes in args.optimizer_specs:
            params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
            for p in params:
                p.grad = torch.full(p.shape, float(r + 1))

            def wrap(op, prefix):
                opt = hvd.DistributedOptimizer(
                    torch.optim.SGD(params, lr=1e-9, momentum=0.9), op=op,
                    named_parameters=[("%s%d" % (prefix, i), p) for i, p in enumerate(params)])
                # The hooks backward would call, in backward's order (an internal API).
                return opt, [opt._make_hook(st) for st in reversed(opt._params)]

            opt, hooks = wrap(hvd.Average, "p")
            opt_sum, hooks_sum = wrap(hvd.Sum, "s")
            grads = [p.grad for p in reversed(params)]
            raw_names = ["raw.%s.%d" % (label, i) for i in range(len(grads))]
            local = torch.optim.SGD(params, lr=1e-9, momentum=0.9)

            def opt_step(o, hs):
                def f():
                    for hook in hs:
                        hook()
                    o.synchronize()
                return f

            def raw_step():
                # hvd_bench's pattern on the same (separately allocated) gradients.
                handles = [hvd.allreduce_async_(g, name=nm, op=hvd.Sum)
                           for g, nm in zip(grads, raw_names)]
                for h in handles:
                    hvd.synchronize(h)

            # Alternated iteration by iteration, so load changes on this
            # shared machine hit all of them alike: Average (what the
            # optimizer does), Sum (the C API comparison's op) and the raw
            # pattern through hvd.torch.
            variants = [("hooks+synchronize", opt_step(opt, hooks)),
                        ("hooks+synchronize, op=Sum", opt_step(opt_sum, hooks_sum)),
                        ("allreduce_async_ Sum, same grads", raw_step)]
            times = {k: [] for k, _ in variants}
            step, sgd = [], []
            for it in range(args.opt_warmup + args.opt_iters):
                for key, fn in variants:
                    hvd.barrier()
                    t0 = time.perf_counter()
                    fn()
                    t1 = time.perf_counter()
                    if it >= args.opt_warmup:
                        times[key].append((t1 - t0) * 1e3)
                hvd.barrier()
                t0 = time.perf_counter()
                opt_step(opt, hooks)()
                with opt.skip_synchronize():
                    opt.step()
                t2 = time.perf_counter()
                local.step()
                t3 = time.perf_counter()
                if it >= args.opt_warmup:
                    step.append((t2 - t0) * 1e3)
                    sgd.append((t3 - t2) * 1e3)
            for key, _ in variants:
                emit(label, "hvd.torch " + key, statistics.median(times[key]))
            emit(label, "hvd.torch step (+SGD update)", statistics.median(step))
            emit(label, "SGD update alone", statistics.median(sgd))

    failed = hvd.allreduce(torch.tensor([0 if all(ok for *_, ok in rows) else 1]), op=hvd.Max,
                           name="torch_bench.failed")
    if r == 0:
        out = csv.writer(sys.stdout)
        for workload, impl, ms, ok in rows:
            out.writerow(["ROW", workload, impl, "%.6f" % ms, "ok" if ok else "FAIL"])
        print("CHECK,%s" % ("ok" if int(failed[0]) == 0 else "FAIL"))
    hvd.shutdown()


# ------------------------------------------------------------------ driver

def launch(args, program):
    if args.launcher == "mpirun":
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np),
               "--mca", "btl_vader_single_copy_mechanism", "none",
               "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"]
    else:
        cmd = [os.path.join(args.build, "bin", "hvdrun"), "-np", str(args.np)]
    return cmd + program


def run(cmd, env):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit("torch_bench: command failed (exit %d)" % p.returncode)
    return p.stdout


def c_api_rows(args, env, workloads, shape_files, gap, tmpdir):
    """hvd_bench --in-place on the same workloads: {workload: ms}."""
    csv_path = os.path.join(tmpdir, "c_api.csv")
    named = [w for w in workloads if w in ("W1", "W2", "W2b", "W3", "W4")]
    cmd = [os.path.join(args.build, "bin", "hvd_bench"), "--in-place", "--gap", str(gap),
           "--csv", csv_path]
    if named:
        cmd += ["--workloads", ",".join(named)]
    else:
        cmd += ["--workloads", "W3"]  # hvd_bench needs one; its row is ignored
    if args.iters is not None:
        cmd += ["--iters", str(args.iters)]
    if args.warmup is not None:
        cmd += ["--warmup", str(args.warmup)]
    for label, path in shape_files:
        cmd += ["--shapes", path]
    run(launch(args, cmd), env)
    base_to_label = {os.path.splitext(os.path.basename(p))[0]: label for label, p in shape_files}
    out = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            if row["impl"] == "hvd":
                out[base_to_label.get(row["workload"], row["workload"])] = float(row["median_ms"])
    return out


def fmt(ms):
    return "%.4f" % ms if ms < 0.1 else "%.3f" % ms if ms < 10 else "%.1f" % ms


def spread(values):
    return "%s (%s–%s)" % (fmt(statistics.median(values)), fmt(min(values)), fmt(max(values)))


def driver(args):
    env = dict(os.environ)
    package = args.package or os.path.join(os.path.abspath(args.build), "python")
    env["PYTHONPATH"] = package + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                   else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    workloads = args.workloads.split(",") if args.workloads else []
    shape_files = [(w, os.path.join(args.shapes_dir, SHAPE_FILES[w]))
                   for w in workloads if w in SHAPE_FILES]
    shape_files += [(os.path.splitext(os.path.basename(f))[0], f) for f in args.shapes]
    labels = workloads + [os.path.splitext(os.path.basename(f))[0] for f in args.shapes]
    worker_cmd = [sys.executable, os.path.abspath(__file__), "--worker",
                  "--workloads", args.workloads, "--gap", str(args.gap),
                  "--shapes-dir", args.shapes_dir]
    for f in args.shapes:
        worker_cmd += ["--shapes", f]
    for flag in ("iters", "warmup"):
        if getattr(args, flag) is not None:
            worker_cmd += ["--" + flag, str(getattr(args, flag))]
    if not args.optimizer:
        worker_cmd += ["--no-optimizer"]

    py, c, cgap = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmpdir:
        opt_files = []
        if args.optimizer:
            digits = os.path.join(tmpdir, "torch_digits.txt")
            with open(digits, "w") as f:
                f.write("# torch_digits model parameters\n")
                f.writelines(" ".join(map(str, s)) + "\n" for s in DIGITS)
            opt_files = [("digits", digits),
                         ("resnet50", os.path.join(args.shapes_dir, SHAPE_FILES["W2"]))]
        print("load average before: %s" % open("/proc/loadavg").read().strip(), flush=True)
        for rnd in range(args.repeat):
            out = run(launch(args, worker_cmd), env)
            for line in out.splitlines():
                if line.startswith("ROW,"):
                    _, wl, impl, ms, ok = next(csv.reader(io.StringIO(line)))
                    if ok != "ok":
                        raise SystemExit("torch_bench: wrong result in %s" % wl)
                    py.setdefault((wl, impl), []).append(float(ms))
                elif line.startswith("CHECK,") and not line.endswith("ok"):
                    raise SystemExit("torch_bench: a check failed")
            if workloads or args.shapes:
                for wl, ms in c_api_rows(args, env, workloads, shape_files, args.gap,
                                         tmpdir).items():
                    c.setdefault(wl, []).append(ms)
            if opt_files:
                for wl, ms in c_api_rows(args, env, [], opt_files, 16, tmpdir).items():
                    cgap.setdefault(wl, []).append(ms)
        print("load average after: %s" % open("/proc/loadavg").read().strip())

    print("\nhvd.torch vs hvd's C API (hvd_bench --in-place --gap %d), np=%d, %s, %d rounds; "
          "ms per iteration, median over rounds (range)\n" % (args.gap, args.np, args.launcher,
                                                              args.repeat))
    print("%-20s %-26s %-26s %-7s %-12s %s" % ("workload", "hvd.torch", "C API", "ratio", "goal",
                                               "Horovod 0.28.1 (issue 20)"))
    for wl in labels:
        if (wl, "hvd.torch") not in py or wl not in c:
            continue
        ratios = [a / b for a, b in zip(py[(wl, "hvd.torch")], c[wl])]
        horovod = HOROVOD_MS.get(wl) if args.gap == 0 else None
        print("%-20s %-26s %-26s %-7s %-12s %s" % (
            wl, spread(py[(wl, "hvd.torch")]), spread(c[wl]),
            "%.2fx" % statistics.median(ratios), GOAL.get(wl, "<= 1.10x"),
            "%.2f" % horovod if horovod else "-"))
    if args.optimizer:
        print("\nDistributedOptimizer step, backward excluded (C API: hvd_bench --in-place "
              "--gap 16 on the same shapes)\n")
        print("%-10s %-26s %-26s %-26s %-26s %-7s %-7s %-26s %s" % (
            "model", "hooks+synchronize", "same, op=Sum", "allreduce_async_ Sum",
            "C API (Sum)", "ratio", "ratio", "step (+SGD update)", "SGD alone"))
        print("%-10s %-26s %-26s %-26s %-26s %-7s %-7s" % ("", "(Average)", "", "same grads", "",
                                                           "/C API", "Sum/C"))
        for label, _ in opt_files:
            comm = py[(label, "hvd.torch hooks+synchronize")]
            comm_sum = py[(label, "hvd.torch hooks+synchronize, op=Sum")]
            raw = py[(label, "hvd.torch allreduce_async_ Sum, same grads")]
            ratios = [a / b for a, b in zip(comm, cgap[label])]
            ratios_sum = [a / b for a, b in zip(comm_sum, cgap[label])]
            print("%-10s %-26s %-26s %-26s %-26s %-7s %-7s %-26s %s" % (
                label, spread(comm), spread(comm_sum), spread(raw), spread(cgap[label]),
                "%.2fx" % statistics.median(ratios), "%.2fx" % statistics.median(ratios_sum),
                spread(py[(label, "hvd.torch step (+SGD update)")]),
                spread(py[(label, "SGD update alone")])))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="W3,W4,W2,W5,W6",
                   help="W3, W4 and shape-file workloads W2 (ResNet-50), W5 (Inception-v3), "
                        "W6 (ResNet-101), W2b (VGG-16); default %(default)s")
    p.add_argument("--shapes", action="append", default=[],
                   help="extra workload from a shape file (repeatable)")
    p.add_argument("--shapes-dir", default=SHARED, help="where the shape files are")
    p.add_argument("--repeat", type=int, default=3, help="rounds (default %(default)s)")
    p.add_argument("--iters", type=int, help="timed iterations (default: hvd_bench's)")
    p.add_argument("--warmup", type=int, help="warm-up iterations (default: hvd_bench's)")
    p.add_argument("--gap", type=int, default=0,
                   help="floats between tensors (0: adjacent views, as hvd_bench)")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--launcher", choices=["mpirun", "hvdrun"], default="mpirun",
                   help="mpirun: MPI backend; hvdrun: Gloo")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build directory")
    p.add_argument("--package", help="directory holding the hvd package to time (default "
                   "BUILD/python; e.g. an older build, for before/after figures)")
    p.add_argument("--no-optimizer", dest="optimizer", action="store_false",
                   help="skip the DistributedOptimizer step")
    p.add_argument("--opt-iters", type=int, default=20)
    p.add_argument("--opt-warmup", type=int, default=3)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        workloads = args.workloads.split(",") if args.workloads else []
        specs = []
        for w in workloads:
            if w == "W3":
                specs.append(("W3", [(256,)]))
            elif w == "W4":
                specs.append(("W4", [(256,)] * 1000))
            elif w in SHAPE_FILES:
                specs.append((w, read_shapes(os.path.join(args.shapes_dir, SHAPE_FILES[w]))))
            else:
                raise SystemExit("torch_bench: unknown workload %s" % w)
        for f in args.shapes:
            specs.append((os.path.splitext(os.path.basename(f))[0], read_shapes(f)))
        args.workload_specs = specs
        args.optimizer_specs = [
            ("digits", DIGITS),
            ("resnet50", read_shapes(os.path.join(args.shapes_dir, SHAPE_FILES["W2"])))]
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
