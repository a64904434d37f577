#!/usr/bin/python3
"""torch_mode_probe: per-iteration times of gradient sets through hvd.torch
(tensors adjacent views of one torch.empty buffer, reduced in place), with
"m" where some of the iteration's large calls used streaming stores and "s"
where most did (hvd_get_stats). Shows whether a slow stretch comes with a
change of hvd's choices or without one (the machine).

    mpirun --allow-run-as-root --oversubscribe -np 2 /usr/bin/python3 \\
        bench/notebook/torch_mode_probe.py resnet101,mobilenet_v3_large 40
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
SHAPES = os.path.join(HERE, "..", "..", "tools", "hvd_bench", "shapes")

import torch  # noqa: E402
from mpi4py import MPI  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from launch_bench import numel, read_shapes  # noqa: E402


def main():
    comm = MPI.COMM_WORLD
    hvd.init(comm=comm)
    rank = hvd.rank()
    sets, iters = sys.argv[1].split(","), int(sys.argv[2])
    for s in sets:
        counts = [numel(sh) for sh in read_shapes(os.path.join(SHAPES, "%s_grads.txt" % s))]
        buf = torch.empty(sum(counts))
        views, off = [], 0
        for c in counts:
            views.append(buf.narrow(0, off, c))
            off += c
        buf.fill_(rank + 1)
        line = []
        for _ in range(iters):
            before = hvd.get_stats()
            comm.Barrier()
            t0 = time.perf_counter()
            handles = [hvd.allreduce_async_(v, name="%s.%d" % (s, i), op=hvd.Sum)
                       for i, v in enumerate(views)]
            for h in handles:
                hvd.synchronize(h)
            ms = (time.perf_counter() - t0) * 1e3
            after = hvd.get_stats()
            chosen = after["shm_chosen_calls"] - before["shm_chosen_calls"]
            streamed = after["shm_streamed_calls"] - before["shm_streamed_calls"]
            mark = "s" if chosen and 2 * streamed > chosen else ("m" if streamed else "")
            line.append("%.1f%s" % (ms, mark))
        if rank == 0:
            print(s[:10].ljust(10), " ".join(line), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
