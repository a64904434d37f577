#!/usr/bin/python3
"""ddp_synthetic_benchmark: the measurement of Horovod's
examples/pytorch/pytorch_synthetic_benchmark.py (synthetic data, a torchvision
model, SGD, img/s over timed iterations of N batches), through torch DDP
(gloo), with the same flags and the same result lines, so
bench/launches/run_training.py can put the three side by side.

    mpirun --allow-run-as-root --oversubscribe -np 2 /usr/bin/python3 \\
        bench/python/ddp_synthetic_benchmark.py --no-cuda --batch-size 16

Ranks come from mpirun (OMPI_COMM_WORLD_*), torchrun (RANK/WORLD_SIZE) or
default to one process; MASTER_ADDR/MASTER_PORT default to 127.0.0.1:29533.

--mode local trains the same model in every process with no communication
at all (no process group): under mpirun -np 2 it gives the step time of the
same work with the same CPU contention, so (distributed step - local step) /
distributed step is the communication the step does not hide behind
backward.
"""
import argparse
import os
import statistics
import timeit

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torchvision import models


def env_int(*names, default):
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    return default


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--no-cuda", action="store_true", help="accepted; this script is CPU only")
    p.add_argument("--mode", choices=["ddp", "local"], default="ddp")
    args = p.parse_args()

    rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK", default=0)
    size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE", default=1)
    model = getattr(models, args.model)()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
    if args.mode == "ddp":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("gloo", rank=rank, world_size=size)
        # As Horovod's script: parameters from rank 0 (DDP broadcasts them);
        # buffers are not synchronised every step (Horovod does not either).
        model = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)

    data = torch.randn(args.batch_size, 3, 224, 224)
    target = torch.LongTensor(args.batch_size).random_() % 1000

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(s):
        if rank == 0:
            print(s, flush=True)

    log("Model: %s" % args.model)
    log("Batch size: %d" % args.batch_size)
    log("Number of CPUs: %d (%s)" % (size, args.mode))
    log("Running warmup...")
    timeit.timeit(step, number=args.num_warmup_batches)
    log("Running benchmark...")
    rates = []
    for i in range(args.num_iters):
        t = timeit.timeit(step, number=args.num_batches_per_iter)
        rates.append(args.batch_size * args.num_batches_per_iter / t)
        log("Iter #%d: %.1f img/sec per CPU" % (i, rates[-1]))
    mean = statistics.mean(rates)
    conf = 1.96 * statistics.pstdev(rates)
    log("Img/sec per CPU: %.1f +-%.1f" % (mean, conf))
    log("Total img/sec on %d CPU(s): %.1f +-%.1f" % (size, size * mean, size * conf))
    if args.mode == "ddp":
        # DDP's own timing (torch samples every one of the first 10 steps,
        # warm-up included): communication still running after backward's
        # compute ended, waiting for slower ranks included (DDP cannot tell
        # the two apart).
        d = model._get_ddp_logging_data()
        comm, overlap = d.get("avg_backward_comm_time"), d.get("avg_backward_compute_comm_overlap_time")
        if comm is not None and overlap is not None:
            step = args.batch_size / mean
            print("ddp_comm rank %d: step %.3f s, backward communication %.4f s a step, %.4f s of it "
                  "after backward's compute (slower ranks included), not hidden %.2f%%"
                  % (rank, step, comm / 1e9, (comm - overlap) / 1e9,
                     100 * (comm - overlap) / 1e9 / step), flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
