#!/usr/bin/python3
"""Times hvd.broadcast of ResNet-50's parameters (25,557,032 float32, 102 MB)
from rank 0: median, min and max of 10 calls after 2 warm-up calls, printed by
rank 0; every rank checks the values it got. docs/benchmarks.md runs it with
HVD_SHARED_MEMORY=1 and 0 alternating:
  PYTHONPATH=build/python build/bin/hvdrun -np 2 /usr/bin/python3 tools/hvd_bench/broadcast_bench.py
"""
import time

import numpy as np

import hvd

hvd.init()
x = np.zeros(25_557_032, dtype=np.float32)
times = []
for i in range(12):
    if hvd.rank() == 0:
        x[:] = i
    t = time.perf_counter()
    y = hvd.broadcast(x, root_rank=0, name="bcast.%d" % i)
    times.append(time.perf_counter() - t)
    assert y[0] == i and y[-1] == i, "rank %d got %s" % (hvd.rank(), y[[0, -1]])
times = sorted(times[2:])
if hvd.rank() == 0:
    print("broadcast 102 MB np=%d: median %.1f ms (min %.1f, max %.1f)"
          % (hvd.size(), 1e3 * times[len(times) // 2], 1e3 * times[0], 1e3 * times[-1]))
hvd.shutdown()
