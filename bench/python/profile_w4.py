#!/usr/bin/env python3
"""cProfile of W4 (1000 x 1 KiB) through hvd.torch: rank 0 prints the top
functions by own time over 20 iterations. Run under mpirun -np 2 with
PYTHONPATH=build/python (docs/benchmarks.md, the Python path)."""
import cProfile
import io
import pstats

import torch

import hvd.torch as hvd
torch.set_num_threads(1)
hvd.init()
buf = torch.ones(1000 * 256)
views = [buf.narrow(0, i * 256, 256) for i in range(1000)]
names = ["w4.%d" % i for i in range(1000)]
def it():
    hs = [hvd.allreduce_async_(v, name=nm, op=hvd.Sum) for v, nm in zip(views, names)]
    for h in hs:
        hvd.synchronize(h)
for _ in range(5): it()
pr = cProfile.Profile()
pr.enable()
for _ in range(20): it()
pr.disable()
if hvd.rank() == 0:
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(8); print(s.getvalue()[:2500])
hvd.shutdown()
