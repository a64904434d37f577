#!/usr/bin/python3
"""Times hvd.broadcast (from rank 0; broadcast_: in place) or hvd.alltoall
(equal splits) of
ResNet-50's parameters (25,557,032 float32, 102 MB per rank), or of
--floats N: median, min and max of --calls calls after 2 warm-up calls,
printed by rank 0; every rank checks the values it got. Under mpirun with
mpi4py, the same call through MPI (MPI_Bcast / MPI_Alltoall on the same
buffers) is timed in the same launch, alternating call by call with hvd's,
as the raw baseline. docs/benchmarks.md runs it with HVD_SHARED_MEMORY=1
and 0 alternating:
  PYTHONPATH=build/python build/bin/hvdrun -np 2 /usr/bin/python3 tools/hvd_bench/host_collective_bench.py --op alltoall
  mpirun --allow-run-as-root --oversubscribe -x PYTHONPATH -np 2 /usr/bin/python3 tools/hvd_bench/host_collective_bench.py --op alltoall
"""
import argparse
import os
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--op", choices=["broadcast", "broadcast_", "alltoall"], default="broadcast")
ap.add_argument("--floats", type=int, default=25_557_032)
ap.add_argument("--calls", type=int, default=10)
args = ap.parse_args()

MPI = None
if "OMPI_COMM_WORLD_SIZE" in os.environ:  # under mpirun: MPI's own call beside hvd's
    try:
        from mpi4py import MPI
    except ImportError:
        pass

import hvd  # noqa: E402  (after mpi4py, which then owns MPI_Init)

hvd.init()
rank, size = hvd.rank(), hvd.size()
n = args.floats // size * size  # alltoall: equal parts
x = np.zeros(n, dtype=np.float32)
y = np.empty_like(x)


def fill(i):
    if args.op.startswith("broadcast"):
        x[:] = i if rank == 0 else -1
    else:  # part d goes to rank d: rank * 1000 + d + i
        x.reshape(size, -1)[:] = (rank * 1000 + np.arange(size) + i)[:, None]


def check(i, got, who):
    if args.op.startswith("broadcast"):
        ok = got[0] == i and got[-1] == i
    else:  # part s came from rank s
        parts = got.reshape(size, -1)
        ok = all(parts[s, 0] == s * 1000 + rank + i and parts[s, -1] == parts[s, 0]
                 for s in range(size))
    assert ok, "%s: rank %d got %s" % (who, rank, got[[0, -1]])


def run_hvd(i):
    if args.op == "broadcast":
        return hvd.broadcast(x, root_rank=0, name="b.%d" % i)
    if args.op == "broadcast_":
        return hvd.broadcast_(x, root_rank=0, name="b.%d" % i)
    return hvd.alltoall(x, name="a.%d" % i)


def run_mpi(i):
    if args.op.startswith("broadcast"):
        MPI.COMM_WORLD.Bcast(x, root=0)
        return x
    MPI.COMM_WORLD.Alltoall(x, y)
    return y


impls = [("hvd", run_hvd)] + ([("raw MPI", run_mpi)] if MPI else [])
times = {name: [] for name, _ in impls}
for i in range(args.calls + 2):
    for name, run in impls:
        fill(i)
        if MPI:
            MPI.COMM_WORLD.Barrier()
        t = time.perf_counter()
        got = run(i)
        times[name].append(time.perf_counter() - t)
        check(i, got, name)
if rank == 0:
    for name, ts in times.items():
        ts = sorted(ts[2:])
        print("%s %s %.0f MB np=%d HVD_SHARED_MEMORY=%s: median %.2f ms (min %.2f, max %.2f)"
              % (name, args.op, n * 4 / 1e6, size, os.environ.get("HVD_SHARED_MEMORY", "default"),
                 1e3 * ts[len(ts) // 2], 1e3 * ts[0], 1e3 * ts[-1]))
hvd.shutdown()
