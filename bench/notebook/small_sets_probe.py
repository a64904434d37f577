#!/usr/bin/python3
# Where hvd.torch loses on a small-tensor set: per-tensor async, one grouped call,
# and raw mpi4py one call, timed in turn iteration by iteration (np=2).
import os, sys, time, statistics, math
from mpi4py import MPI
import torch, hvd.torch as hvd
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from launch_bench import read_shapes  # noqa: E402  the shape files' one reader
comm = MPI.COMM_WORLD
hvd.init(comm=comm)
path = sys.argv[1]; iters = int(sys.argv[2]) if len(sys.argv) > 2 else 100
shapes = read_shapes(path)
n = sum(math.prod(s) for s in shapes)
buf = torch.empty(n).fill_(1.0)
views, off = [], 0
for s in shapes:
    c = math.prod(s); views.append(buf.narrow(0, off, c).view(s)); off += c
names = ["t%d" % i for i in range(len(views))]
flat = buf.numpy()
def per_tensor():
    hs = [hvd.allreduce_async_(v, name=nm, op=hvd.Sum) for v, nm in zip(views, names)]
    for h in hs: hvd.synchronize(h)
def submit_only():
    t0 = time.perf_counter()
    hs = [hvd.allreduce_async_(v, name=nm, op=hvd.Sum) for v, nm in zip(views, names)]
    t1 = time.perf_counter()
    for h in hs: hvd.synchronize(h)
    return (t1 - t0) * 1e3
def grouped():
    hvd.synchronize(hvd.grouped_allreduce_async_(views, name="g", op=hvd.Sum))
def raw():
    comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
impls = [("per tensor", per_tensor), ("grouped", grouped), ("raw one call", raw)]
times = {k: [] for k, _ in impls}; sub = []
for it in range(10 + iters):
    for k, f in (impls if it % 2 == 0 else impls[::-1]):
        comm.Barrier(); t0 = time.perf_counter(); f(); t1 = time.perf_counter()
        if it >= 10: times[k].append((t1 - t0) * 1e3)
    comm.Barrier()
    if it >= 10: sub.append(submit_only())
if comm.rank == 0:
    for k, v in times.items():
        print("%-14s median %.3f  min %.3f ms" % (k, statistics.median(v), min(v)))
    print("submit of %d tensors: median %.3f ms" % (len(views), statistics.median(sub)))
hvd.shutdown()
