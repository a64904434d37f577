#!/usr/bin/python3
# Page size of the user's buffer against hvd and raw MPI (np=2): one set's
# tensors as views of a numpy buffer in transparent huge pages (numpy's
# default for large arrays), of one in 4 KiB pages (numpy told not to) and
# of one from hvd.shared_zeros (the ranks' shared memory, where hvd reduces
# between the buffers), in one process; hvd.torch's grouped
# allreduce_async_ and mpi4py's one call in place, each timed in blocks,
# three rounds alternating the order.
#   mpirun -np 2 --bind-to core -x PYTHONPATH /usr/bin/python3 \
#       bench/notebook/huge_pages_probe.py tools/hvd_bench/shapes/<set>_grads.txt [iters]
import os, sys, time, statistics, math
from mpi4py import MPI
import numpy as np
import torch, hvd.torch as hvd
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from launch_bench import read_shapes  # noqa: E402  the shape files' one reader

comm = MPI.COMM_WORLD
hvd.init(comm=comm)
shapes = read_shapes(sys.argv[1])
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 30
n = sum(math.prod(s) for s in shapes)


def thp_faults():
    for line in open("/proc/vmstat"):
        if line.startswith("thp_fault_alloc "):
            return int(line.split()[1])


KINDS = ("huge", "4k", "shared")
bufs = {}
for kind in KINDS:
    np.core.multiarray._set_madvise_hugepage(kind == "huge")
    f0 = thp_faults()
    t = hvd.shared_zeros(n) if kind == "shared" else torch.from_numpy(np.empty(n, np.float32))
    t.fill_(1.0)
    a = t.numpy()
    views, off = [], 0
    for s in shapes:
        c = math.prod(s)
        views.append(t.narrow(0, off, c).view(s))
        off += c
    bufs[kind] = (a, views, thp_faults() - f0)


def run_hvd(kind):
    hvd.synchronize(hvd.grouped_allreduce_async_(bufs[kind][1], name="g" + kind, op=hvd.Sum))


def run_raw(kind):
    comm.Allreduce(MPI.IN_PLACE, bufs[kind][0], op=MPI.SUM)


res = {}
for rnd in range(3):
    for impl, fn in (("raw", run_raw), ("hvd", run_hvd)):
        for kind in (KINDS if rnd % 2 == 0 else KINDS[::-1]):
            ts = []
            for it in range(5 + iters):
                comm.Barrier()
                t0 = time.perf_counter()
                fn(kind)
                if it >= 5:
                    ts.append((time.perf_counter() - t0) * 1e3)
            res.setdefault((impl, kind), []).append(statistics.median(ts))
if comm.rank == 0:
    print("huge-page faults while filling each buffer:", {k: v[2] for k, v in bufs.items()})
    for (impl, kind), v in sorted(res.items()):
        print("%-4s %-6s median ms per round: %s" % (impl, kind, " ".join("%.3f" % x for x in v)))
hvd.shutdown()
