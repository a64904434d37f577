#!/usr/bin/python3
"""launch_bench: one launch of the gradient-set workloads through a PyTorch
binding (hvd.torch, or Horovod's horovod.torch: the same script for both),
with raw MPI (mpi4py) on the same buffers in the same launch.

    mpirun --allow-run-as-root --oversubscribe -np 2 /usr/bin/python3 \\
        bench/python/launch_bench.py --sets W1,W2,W4,PATH/to/x_grads.txt --csv out.csv

Every tensor of a set is a view into one contiguous float32 buffer (adjacent,
as DDP's bucket views make them), reduced in place; with --shared-buffers
that buffer is from hvd.shared_zeros (hvd_alloc_shared), as
DistributedOptimizer's gradients are where ranks share a host, for the
binding and the raw patterns alike. One iteration:
- binding: allreduce_async_(view, name, op=Sum) on every tensor in file
  order, then synchronize() on each (the pattern of WORKLOADS.md);
- raw MPI, each pattern in place on the same buffer: one Allreduce per
  tensor; one Allreduce over the whole buffer; the buffer in
  --chunk-bytes pieces (4 MiB, HVD_ALLREDUCE_CHUNK_BYTES's default) and in
  cache-sized pieces (as hvd_bench). The fastest is "best raw MPI".
Sets of 1 MiB or more barrier before each iteration. Inputs are rank+1 and
the first iteration of every implementation is checked exactly (later ones
keep summing in place: the values grow, the work does not change).

Phases, as hvd_bench orders them: the raw patterns for --rounds rounds
before the binding's init(); then init(comm=MPI.COMM_WORLD) (or init() with
--plain-init); then --rounds rounds of [binding, raw patterns with the
binding idle]. A figure is the median over rounds of each round's median
(rank 0), with the range over rounds.

--paired (sets of 1 MiB or more) also times the binding and each raw
pattern iteration by iteration, in turn (forward and backward alternately,
a barrier before each, the first of each checked exactly), as hvd_bench
--paired does: in blocks the later raw patterns of a set meet its buffer
warmed by the earlier ones, the binding meets it as the other sets left it
(see CACHED_SET_BYTES), and the machine may drift between blocks. Rows
"(paired)", whose ratio is to the best paired raw.

--csv writes hvd_bench's columns (workload,impl,median_ms,min_ms,max_ms,
busbw_gbs,ratio_to_best_raw) and the same impl names ("hvd" is the binding's
row whatever the module, so bench/launches/summarize.py reads both), where
ratio = time / best raw MPI before init.
"""
import argparse
import csv
import io
import os
import statistics
import sys
import time

# The workloads' files and iteration counts, as torch_bench (and hvd_bench) has them.
from torch_bench import SHAPE_FILES, defaults_for, numel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHAPES_DIR = os.path.join(ROOT, "tools", "hvd_bench", "shapes")
MiB = 1 << 20
# A set of at most this size stays in this host's last-level cache between
# iterations once warm, which takes it about five: new or evicted by the
# sets before it, the first of them run 1.2-1.7x slower, for raw MPI and
# the binding alike. In blocks the later raw patterns meet it warm, so each
# implementation gets at least WARM_ITERS warm-up iterations on such a set.
CACHED_SET_BYTES, WARM_ITERS = 128 * MiB, 5


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            dims = line.split("#", 1)[0].split()
            if dims:
                shapes.append(tuple(int(d) for d in dims))
    if not shapes:
        raise SystemExit("launch_bench: no tensors in %s" % path)
    return shapes


def set_spec(name, shapes_dir):
    """(label, [shapes], warmup, iters) for a name or a shape-file path."""
    if name == "W1":
        shapes = [(16 * MiB,)]
    elif name == "W3":
        shapes = [(256,)]
    elif name == "W4":
        shapes = [(256,)] * 1000
    elif name in SHAPE_FILES:
        shapes = read_shapes(os.path.join(shapes_dir, SHAPE_FILES[name]))
    elif "/" in name or name.endswith(".txt"):
        shapes = read_shapes(name)
        name = os.path.splitext(os.path.basename(name))[0]
    else:
        raise SystemExit("launch_bench: unknown set %r (W1, W2, W2b, W3, W4, W5, W6 or a "
                         "shape file)" % name)
    return name, shapes


class Set:
    def __init__(self, torch, name, shapes, rank, args, shared_zeros=None):
        self.name = name
        self.counts = [numel(s) for s in shapes]
        self.nbytes = 4 * sum(self.counts)
        warmup, iters = defaults_for(name, self.nbytes)
        if self.nbytes >= MiB:  # small sets are cheap: they keep their defaults
            self.warmup = args.warmup if args.warmup is not None else warmup
            self.iters = args.iters if args.iters is not None else iters
        else:
            self.warmup, self.iters = warmup, iters
        if MiB <= self.nbytes <= CACHED_SET_BYTES:
            self.warmup = max(self.warmup, WARM_ITERS)
        if self.nbytes > (256 << 20) and args.big_iters is not None:
            self.iters = args.big_iters
        n = sum(self.counts)
        if shared_zeros:
            self.buf = shared_zeros(n)
        elif args.huge_pages:  # numpy asks for huge pages on large arrays (torch 1.13 does not)
            import numpy
            self.buf = torch.from_numpy(numpy.empty(n, dtype=numpy.float32))
        else:
            self.buf = torch.empty(n)
        self.buf.fill_(float(rank + 1))
        self.flat = self.buf.numpy()  # shares memory with buf
        self.views, self.np_views, off = [], [], 0
        for c, s in zip(self.counts, shapes):
            self.views.append(self.buf.narrow(0, off, c).view(s))
            self.np_views.append(self.flat[off:off + c])
            off += c
        self.names = ["%s.%d" % (name, i) for i in range(len(self.views))]
        self.align = self.nbytes >= MiB
        self.chunks = self.pieces(args.chunk_bytes)
        self.cache_chunks = self.pieces(args.cache_chunk_bytes) \
            if args.cache_chunk_bytes and args.cache_chunk_bytes != args.chunk_bytes else []

    def pieces(self, nbytes):
        per = max(1, nbytes // 4)
        return [self.flat[o:o + per] for o in range(0, self.flat.size, per)]

    def reset(self, rank):
        self.buf.fill_(float(rank + 1))

    def correct(self, size):
        want = size * (size + 1) / 2
        return bool((self.buf == want).all())


def raw_patterns(s, comm, MPI):
    """name -> one iteration of that raw pattern (in place on s's buffer)."""
    def per_tensor():
        for v in s.np_views:
            comm.Allreduce(MPI.IN_PLACE, v, op=MPI.SUM)

    def one_call():
        comm.Allreduce(MPI.IN_PLACE, s.flat, op=MPI.SUM)

    def chunked():
        for c in s.chunks:
            comm.Allreduce(MPI.IN_PLACE, c, op=MPI.SUM)

    def chunked_cache():
        for c in s.cache_chunks:
            comm.Allreduce(MPI.IN_PLACE, c, op=MPI.SUM)

    out = {"per tensor": per_tensor}
    if len(s.np_views) > 1:
        out["one call"] = one_call
    if len(s.chunks) > 1:
        out["chunked"] = chunked
    if len(s.cache_chunks) > 1:
        out["chunked, cache-sized"] = chunked_cache
    return out


def cache_chunk_bytes():
    """hvd_bench's cache-sized pieces: half the L2 cache, 256 KiB to 4 MiB."""
    try:
        l2 = os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (ValueError, OSError):
        l2 = 0
    l2 = l2 if l2 > 0 else MiB
    return min(max(l2 // 2, 256 << 10), 4 * MiB)


def time_it(s, fn, barrier, rank, size):
    """Median ms per iteration (rank 0's clock) and whether the first was right."""
    s.reset(rank)
    barrier()
    times, ok = [], True
    for it in range(s.warmup + s.iters):
        if s.align:
            barrier()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if it == 0:
            ok = s.correct(size)
        if it >= s.warmup:
            times.append((t1 - t0) * 1e3)
    return statistics.median(times), ok


def time_paired(s, impls, barrier, rank, size):
    """{name: median ms}, {name: first run right} of [(name, fn)], timed in
    turn iteration by iteration."""
    ok = {}
    for name, fn in impls:
        s.reset(rank)
        barrier()
        fn()
        ok[name] = s.correct(size)
    s.reset(rank)  # later iterations keep summing in place: the values grow, the work does not
    times = {name: [] for name, _ in impls}
    for it in range(s.warmup + s.iters):
        for name, fn in (impls if it % 2 == 0 else impls[::-1]):
            barrier()
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            if it >= s.warmup:
                times[name].append((t1 - t0) * 1e3)
    return {name: statistics.median(v) for name, v in times.items()}, ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="W1,W2,W2b,W5,W6,W4",
                   help="comma-separated W1,W2,W2b,W3,W4,W5,W6 or shape-file paths")
    p.add_argument("--shapes-dir", default=SHAPES_DIR)
    p.add_argument("--module", default="hvd.torch",
                   help="binding to time: hvd.torch (default) or horovod.torch")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--iters", type=int, help="timed iterations of sets of 1 MiB or more "
                   "(default: hvd_bench's per set; smaller sets always keep theirs)")
    p.add_argument("--warmup", type=int, help="warm-up iterations of sets of 1 MiB or more "
                   "(at least %d up to %d MiB: CACHED_SET_BYTES)" % (WARM_ITERS,
                                                                    CACHED_SET_BYTES // MiB))
    p.add_argument("--big-iters", type=int,
                   help="timed iterations for sets over 256 MiB (default: --iters)")
    p.add_argument("--chunk-bytes", type=int,
                   default=int(os.environ.get("HVD_ALLREDUCE_CHUNK_BYTES", 4 * MiB)),
                   help="the chunked pattern's pieces (default HVD_ALLREDUCE_CHUNK_BYTES or 4 MiB)")
    knob = os.environ.get("HVD_ALLREDUCE_CHUNK_BYTES") or \
        os.environ.get("HOROVOD_ALLREDUCE_CHUNK_BYTES")
    p.add_argument("--cache-chunk-bytes", type=int, default=0 if knob else cache_chunk_bytes(),
                   help="also time pieces of this size (default, as hvd_bench: half the L2 "
                        "cache within 256 KiB..4 MiB, unless the chunk knob is set; 0: off)")
    p.add_argument("--plain-init", action="store_true",
                   help="init() instead of init(comm=MPI.COMM_WORLD)")
    p.add_argument("--no-raw", action="store_true", help="skip the raw MPI patterns")
    p.add_argument("--paired", action="store_true",
                   help="also time the binding and the raw patterns in turn, iteration by "
                        "iteration, on sets of 1 MiB or more")
    p.add_argument("--csv", help="rank 0 writes the rows here")
    p.add_argument("--shared-buffers", action="store_true",
                   help="every set's buffer from hvd.shared_zeros (--module hvd.torch only)")
    p.add_argument("--huge-pages", action="store_true",
                   help="every set's buffer from numpy, which asks for transparent huge pages "
                        "on large arrays (as hvd_bench --huge-pages)")
    args = p.parse_args()
    if args.huge_pages and args.shared_buffers:
        raise SystemExit("launch_bench: --shared-buffers and --huge-pages exclude each other")

    import importlib
    import torch
    from mpi4py import MPI  # initialises MPI (thread multiple) before the binding

    torch.set_num_threads(1)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    hvd = importlib.import_module(args.module)
    if args.shared_buffers and not hasattr(hvd, "shared_zeros"):
        raise SystemExit("launch_bench: --shared-buffers needs --module hvd.torch")
    shared = hvd.shared_zeros if args.shared_buffers else None
    sets = [Set(torch, *set_spec(n, args.shapes_dir), rank, args, shared)
            for n in args.sets.split(",") if n]
    patterns = {s.name: ({} if args.no_raw else raw_patterns(s, comm, MPI)) for s in sets}
    # series[(set, impl)] = per-round medians; checks[(set, impl)] = all right
    series, checks = {}, {}

    def record(s, impl, ms, ok):
        series.setdefault((s.name, impl), []).append(ms)
        checks[(s.name, impl)] = checks.get((s.name, impl), True) and ok

    def raw_round(suffix):
        for s in sets:
            best = None
            for pname, fn in patterns[s.name].items():
                ms, ok = time_it(s, fn, comm.Barrier, rank, size)
                record(s, "raw MPI %s%s" % (pname, suffix), ms, ok)
                best = ms if best is None else min(best, ms)
            if best is not None:
                record(s, "best raw MPI%s" % suffix, best, True)

    for _ in range(args.rounds):
        raw_round("")
    t_init = time.perf_counter()
    if args.plain_init:
        hvd.init()
    else:
        hvd.init(comm=comm)
    init_ms = (time.perf_counter() - t_init) * 1e3
    if hvd.size() != size or hvd.rank() != rank:
        raise SystemExit("launch_bench: %s is rank %d of %d, MPI says %d of %d"
                         % (args.module, hvd.rank(), hvd.size(), rank, size))
    allreduce_async_, synchronize, Sum = hvd.allreduce_async_, hvd.synchronize, hvd.Sum

    def binding_iter(s):
        handles = [allreduce_async_(v, name=n, op=Sum) for v, n in zip(s.views, s.names)]
        for h in handles:
            synchronize(h)

    def paired_round():
        for s in sets:
            if not s.align or not patterns[s.name]:
                continue
            impls = [("hvd", lambda s=s: binding_iter(s))] + [
                ("raw MPI " + name, fn) for name, fn in patterns[s.name].items()]
            medians, oks = time_paired(s, impls, comm.Barrier, rank, size)
            for name, ms in medians.items():
                record(s, name + " (paired)", ms, oks[name])
            record(s, "best raw MPI (paired)",
                   min(ms for name, ms in medians.items() if name != "hvd"), True)

    for _ in range(args.rounds):
        for s in sets:
            ms, ok = time_it(s, lambda s=s: binding_iter(s), hvd.barrier, rank, size)
            record(s, "hvd", ms, ok)
            if rank == 0:
                print("launch_bench: %s %s %.3f ms" % (s.name, args.module, ms), file=sys.stderr,
                      flush=True)
        raw_round(" (hvd idle)")
        if args.paired:
            paired_round()

    failed = comm.allreduce(0 if all(checks.values()) else 1, op=MPI.MAX)
    if rank == 0:
        text = io.StringIO()
        out = csv.writer(text, lineterminator="\n")
        out.writerow(["workload", "impl", "median_ms", "min_ms", "max_ms", "busbw_gbs",
                      "ratio_to_best_raw"])
        for s in sets:
            best_ms = {}
            for kind in ("best raw MPI", "best raw MPI (paired)"):
                best = series.get((s.name, kind))
                best_ms[kind] = statistics.median(best) if best else None
            for (name, impl), values in series.items():
                if name != s.name:
                    continue
                med = statistics.median(values)
                busbw = s.nbytes / (med * 1e-3) * 2 * (size - 1) / size / 1e9
                b = best_ms["best raw MPI (paired)" if impl.endswith("(paired)") else "best raw MPI"]
                ratio = "%.4f" % (med / b) if b else ""
                if not checks[(name, impl)]:
                    impl += " WRONG RESULT"
                out.writerow([name, impl, "%.6f" % med, "%.6f" % min(values),
                              "%.6f" % max(values), "%.3f" % busbw, ratio])
        text = text.getvalue()
        if args.csv:
            with open(args.csv, "w") as f:
                f.write(text)
        sys.stdout.write(text)
        print("launch_bench: %s %s, np=%d, init %.1f ms, %d rounds, checks %s" % (
            args.module, getattr(sys.modules[args.module.split(".")[0]], "__version__", ""), size, init_ms, args.rounds,
            "ok" if failed == 0 else "FAILED"), file=sys.stderr)
    hvd.shutdown()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
