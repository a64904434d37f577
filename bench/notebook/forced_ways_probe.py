#!/usr/bin/python3
"""Forced ways against the chosen one, iteration by iteration, in one launch (np=2).

Needs a throwaway build whose library reads an environment variable per call
and forces a way with it (unset: hvd chooses), e.g. for the rounds' placement
in shm_shared.cc, `c.turns = getenv("HVD_X_TURNS") ? ... : turns_;` (member 0
then skips ChooseTurns), or for the stores in StoreTimer, HVD_X_STREAM
(one character per member, e.g. 01: member 0 plain, member 1 streaming;
forced calls not recorded). The
set is summed into one buffer, allreduced through hvd.torch as one tensor,
beside raw mpi4py one call and in 4 MiB pieces (notebook, 2026-12-05 23:46).

    mpirun -np 2 /usr/bin/python3 forced_ways_probe.py SHAPES|W1 ITERS VAR [NAME=VALUE ...]
    e.g. ... mobilenet_v3_large_grads.txt 150 HVD_X_TURNS first=0 turns=1
         ... W1 40 HVD_X_STREAM both_plain=00 both_stream=11 mixed=01
"""
import math
import os
import statistics
import sys
import time

import torch
from mpi4py import MPI

import hvd.torch as hvd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from launch_bench import read_shapes  # noqa: E402  the shape files' one reader

torch.set_num_threads(1)
comm = MPI.COMM_WORLD
hvd.init(comm=comm)
iters, var = int(sys.argv[2]), sys.argv[3]
shapes = [(16 << 20,)] if sys.argv[1] == "W1" else read_shapes(sys.argv[1])
buf = torch.empty(sum(math.prod(s) for s in shapes)).fill_(1.0)
flat = buf.numpy()


def hv(value):
    def f():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
        hvd.synchronize(hvd.allreduce_async_(buf, name="whole", op=hvd.Sum))
    return f


def chunked():
    for o in range(0, flat.size, 1 << 20):
        comm.Allreduce(MPI.IN_PLACE, flat[o:o + (1 << 20)], op=MPI.SUM)


ways = [("chosen", None)] + [tuple(a.split("=", 1)) for a in sys.argv[4:]]
impls = [(name, hv(value)) for name, value in ways]
for _, f in impls:  # each way exact once
    buf.fill_(float(comm.rank + 1))
    f()
    assert bool((buf == 3).all()), "wrong result"
impls += [("raw one call", lambda: comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)),
          ("raw 4 MiB", chunked)]
times = {k: [] for k, _ in impls}
for it in range(10 + iters):
    for k, f in (impls if it % 2 == 0 else impls[::-1]):
        comm.Barrier()
        t0 = time.perf_counter()
        f()
        if it >= 10:
            times[k].append((time.perf_counter() - t0) * 1e3)
if comm.rank == 0:
    print(os.path.basename(sys.argv[1]),
          " | ".join("%s %.3f" % (k, statistics.median(v)) for k, v in times.items()))
hvd.shutdown()
