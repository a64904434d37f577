#!/usr/bin/python3
"""chooser_trap_probe: one gradient set (default MobileNetV3-L) through
hvd.torch for N steps (allreduce_async_ of every view of one buffer, then
synchronize), printing rank 0's median ms per block of 20 steps, with an
"s" where most of the block's calls streamed (hvd.get_stats'
shm_streamed_calls). A launch whose blocks jump and stay there marks a
chooser's state; a build that logs member 0's choices then tells a trap
from the machine's slow mode (notebook, 2026-12-06 evening).

    mpirun --allow-run-as-root -np 2 --bind-to core /usr/bin/python3 \\
        bench/notebook/chooser_trap_probe.py mobilenet_v3_large 300
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402
from mpi4py import MPI  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from launch_bench import read_shapes  # noqa: E402
from torch_bench import numel  # noqa: E402

BLOCK = 20


def main():
    torch.set_num_threads(1)
    hvd.init(comm=MPI.COMM_WORLD)
    name = sys.argv[1] if len(sys.argv) > 1 else "mobilenet_v3_large"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    shapes = read_shapes(os.path.join(HERE, "..", "..", "tools", "hvd_bench", "shapes",
                                      "%s_grads.txt" % name))
    counts = [numel(s) for s in shapes]
    buf = torch.empty(sum(counts))
    buf.fill_(1.0)
    views, off = [], 0
    for c, s in zip(counts, shapes):
        views.append(buf.narrow(0, off, c).view(s))
        off += c
    names = ["m.%d" % i for i in range(len(views))]
    ms, streamed = [], []
    for _ in range(steps):
        hvd.barrier()
        before = hvd.get_stats()["shm_streamed_calls"]
        t0 = time.perf_counter()
        handles = [hvd.allreduce_async_(v, name=n, op=hvd.Sum) for v, n in zip(views, names)]
        for h in handles:
            hvd.synchronize(h)
        ms.append((time.perf_counter() - t0) * 1e3)
        streamed.append(hvd.get_stats()["shm_streamed_calls"] - before)
    if hvd.rank() == 0:
        blocks = ["%.2f%s" % (statistics.median(ms[b:b + BLOCK]),
                              "s" if 2 * sum(streamed[b:b + BLOCK]) >= BLOCK else "")
                  for b in range(0, steps, BLOCK)]
        print(name, "blocks of %d steps (median ms; s: mostly streamed):" % BLOCK,
              " ".join(blocks), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
