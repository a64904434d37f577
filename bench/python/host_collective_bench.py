#!/usr/bin/python3
"""Times one collective of ResNet-50's parameters (25,557,032 float32, 102
MB per rank; --floats N for another size) through hvd's Python binding:
broadcast (from rank 0, a new array), broadcast_ (in place), alltoall (equal
splits), allgather (each rank gives 1/size of it) or reducescatter (Sum;
each rank gets 1/size). Median, min and max of --calls calls after 2
warm-up calls, printed by rank 0; every rank checks the values it got.
Under mpirun with mpi4py, MPI's own call on the same buffers (MPI_Bcast,
MPI_Alltoall, MPI_Allgather, MPI_Reduce_scatter; for reducescatter also
in 4 MiB rounds) is timed in the same launch, alternating call by call
with hvd's, as the raw baseline.
docs/benchmarks.md runs it with HVD_SHARED_MEMORY=1 and 0 alternating:
  PYTHONPATH=build/python build/bin/hvdrun -np 2 /usr/bin/python3 bench/python/host_collective_bench.py --op alltoall
  mpirun --allow-run-as-root --oversubscribe -x PYTHONPATH -np 2 /usr/bin/python3 bench/python/host_collective_bench.py --op alltoall
"""
import argparse
import os
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--op", default="broadcast",
                choices=["broadcast", "broadcast_", "alltoall", "allgather", "reducescatter"])
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
n = args.floats // size * size  # equal parts
part = n // size
x = np.zeros(n, dtype=np.float32)
y = np.empty_like(x)
op = args.op


def fill(i):
    if op.startswith("broadcast"):
        x[:] = i if rank == 0 else -1
    elif op == "allgather":  # only the first part is sent
        x[:part] = rank * 1000 + i
    else:  # part d goes to rank d: rank * 1000 + d + i
        x.reshape(size, -1)[:] = (rank * 1000 + np.arange(size) + i)[:, None]


def check(i, got, who):
    if op.startswith("broadcast"):
        ok = got[0] == i and got[-1] == i
    elif op == "reducescatter":  # the sum of every rank's part for me
        want = sum(r * 1000 + rank + i for r in range(size))
        ok = got.size == part and got[0] == want and got[-1] == want
    else:  # part s came from rank s
        parts = got.reshape(size, -1)
        first = [s * 1000 + (0 if op == "allgather" else rank) + i for s in range(size)]
        ok = all(parts[s, 0] == first[s] and parts[s, -1] == first[s] for s in range(size))
    assert ok, "%s: rank %d got %s" % (who, rank, got[[0, -1]])


def run_hvd(i):
    name = "%s.%d" % (op, i)
    if op == "broadcast":
        return hvd.broadcast(x, root_rank=0, name=name)
    if op == "broadcast_":
        return hvd.broadcast_(x, root_rank=0, name=name)
    if op == "allgather":
        return hvd.allgather(x[:part], name=name)
    if op == "reducescatter":
        return hvd.reducescatter(x, op=hvd.Sum, name=name)
    return hvd.alltoall(x, name=name)


def run_mpi(i):
    if op.startswith("broadcast"):
        MPI.COMM_WORLD.Bcast(x, root=0)
        return x
    if op == "allgather":
        MPI.COMM_WORLD.Allgather(x[:part], y)
        return y
    if op == "reducescatter":
        MPI.COMM_WORLD.Reduce_scatter(x, y[:part], [part] * size, op=MPI.SUM)
        return y[:part]
    MPI.COMM_WORLD.Alltoall(x, y)
    return y


STAGE = np.empty(1 << 20, dtype=np.float32)  # 4 MiB, reused: warm pages


def run_mpi_rounds(i):
    """reducescatter in rounds of 4 MiB through a reused staging buffer: what
    a user would write by hand where one large call is slow (Open MPI's
    allocates a temporary of its whole input). MPI_Reduce_scatter, not
    _block: Open MPI 4.1's block form took 0.4-1.4 s here, in rounds too."""
    q = STAGE.size // size
    blocks = x.reshape(size, -1)
    for o in range(0, part, q):
        k = min(q, part - o)
        stage = STAGE[:k * size].reshape(size, k)
        stage[:] = blocks[:, o:o + k]
        MPI.COMM_WORLD.Reduce_scatter(stage, y[o:o + k], [k] * size, op=MPI.SUM)
    return y[:part]


impls = [("hvd", run_hvd)]
if MPI:
    impls.append(("raw MPI", run_mpi))
    if op == "reducescatter":
        impls.append(("raw MPI in 4 MiB rounds", run_mpi_rounds))
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
        print("%s %s %.3g MB np=%d HVD_SHARED_MEMORY=%s: median %.2f ms (min %.2f, max %.2f)"
              % (name, op, n * 4 / 1e6, size, os.environ.get("HVD_SHARED_MEMORY", "default"),
                 1e3 * ts[len(ts) // 2], 1e3 * ts[0], 1e3 * ts[-1]))
hvd.shutdown()
