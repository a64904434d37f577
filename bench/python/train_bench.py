#!/usr/bin/env python3
"""train_bench: a ResNet-50 training step on CPU through hvd.torch's
DistributedOptimizer and through torch DDP (gloo), in the same launch.

    mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH=build/python \\
        /usr/bin/python3 bench/python/train_bench.py [--batch 16] [--image-size 224]

(or `build/bin/hvdrun -np 2 ...`). Every rank builds torchvision's ResNet-50
(random weights, random data, SGD with momentum) three times over, from the
same seed, and runs rounds of steps in turn:

  local  forward, backward, SGD step, no communication at all;
  hvd    the same with hvd.torch.DistributedOptimizer (allreduces start in
         backward hooks; step() waits for them; gradients in shared buffers
         from the second step on);
  hvd-private  the same with gradient_as_bucket_view=False: gradients in
         the process's own memory, as before 2026-12-03;
  ddp    the same with torch.nn.parallel.DistributedDataParallel over a gloo
         process group (broadcast_buffers off, like hvd, so both move only
         gradients).

Rank 0 prints, per mode, the median step time over all timed steps, images/s
(global batch / step time) and the unhidden communication: step time minus
the local step time, as a fraction of the step. For hvd it also prints the
time step() spent waiting for allreduces after backward (measured directly).
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torchvision

import hvd.torch as hvd


def make(seed):
    torch.manual_seed(seed)
    model = torchvision.models.resnet50()
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    # Below 16 images, on one thread, torch 1.13 runs 1x1 convolutions as
    # im2col + GEMM (slow_conv2d) instead of oneDNN: with Debian's reference
    # BLAS a step takes about 8x as long per image.
    p.add_argument("--batch", type=int, default=16, help="images per rank (default %(default)s)")
    p.add_argument("--image-size", type=int, default=224, help="pixels (default %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of local, hvd, ddp")
    p.add_argument("--steps", type=int, default=4, help="timed steps per mode per round")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps per mode per round")
    p.add_argument("--port", type=int, default=29533, help="DDP's rendezvous port on localhost")
    p.add_argument("--modes", default="local,hvd,hvd-private,ddp",
                   help="comma-separated, run in this order each round (default %(default)s)")
    args = p.parse_args()

    torch.set_num_threads(1)  # ranks share the machine's cores
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % args.port, rank=rank,
                            world_size=size)

    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=g)
    y = torch.randint(0, 1000, (args.batch,), generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()

    local_model, local_opt = make(0)

    def hvd_mode(**kwargs):
        model, opt = make(0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(), **kwargs)

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            t0 = time.perf_counter()
            opt.synchronize()  # what step() waits for after backward
            t1 = time.perf_counter()
            with opt.skip_synchronize():
                opt.step()
            return t1 - t0
        return model, step

    ddp_base, _ = make(0)
    ddp_model = torch.nn.parallel.DistributedDataParallel(ddp_base, broadcast_buffers=False)
    ddp_opt = torch.optim.SGD(ddp_model.parameters(), lr=0.01, momentum=0.9)

    def local_step():
        local_opt.zero_grad()
        loss_fn(local_model(x), y).backward()
        local_opt.step()
        return 0.0

    def ddp_step():
        ddp_opt.zero_grad()
        loss_fn(ddp_model(x), y).backward()  # DDP's allreduces finish inside backward
        ddp_opt.step()
        return 0.0

    hvd_model, hvd_step = hvd_mode()
    private_model, private_step = hvd_mode(gradient_as_bucket_view=False)
    steps = {"local": local_step, "hvd": hvd_step, "hvd-private": private_step, "ddp": ddp_step}
    modes = [(m, steps[m]) for m in args.modes.split(",")]
    times = {m: [] for m, _ in modes}
    waits = {m: [] for m, _ in modes}
    cpu = {m: [] for m, _ in modes}
    for _ in range(args.rounds):
        for mode, step in modes:
            for it in range(args.warmup + args.steps):
                hvd.barrier()
                t0, c0 = time.perf_counter(), time.thread_time()
                wait = step()
                t1, c1 = time.perf_counter(), time.thread_time()
                if it >= args.warmup:
                    times[mode].append(t1 - t0)
                    waits[mode].append(wait)
                    cpu[mode].append(c1 - c0)

    # The replicas must agree after training: a check that both really reduced.
    same = []
    for model in (hvd_model, private_model, ddp_base):
        flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
        rows = hvd.allgather(flat[:100000].unsqueeze(0))
        same.append(all(torch.equal(rows[0], rows[k]) for k in range(1, size)))
    cpu_ranks = hvd.allgather(torch.tensor([[statistics.median(cpu[m]) for m, _ in modes]],
                                           dtype=torch.float64))

    if rank == 0:
        local = statistics.median(times["local"]) if "local" in times else 0.0
        print("ResNet-50 (torchvision %s, torch %s), CPU, np=%d, batch %d/rank, %dx%d images, "
              "%d timed steps per mode; load average %s"
              % (torchvision.__version__, torch.__version__, size, args.batch, args.image_size,
                 args.image_size, args.rounds * args.steps, open("/proc/loadavg").read().split()[0]))
        print("%-6s %12s %12s %12s %14s %10s" % ("mode", "step_s", "range_s", "images/s",
                                                 "unhidden_s", "fraction"))
        for mode, _ in modes:
            t = statistics.median(times[mode])
            unhidden = max(0.0, t - local) if local and mode != "local" else 0.0
            print("%-6s %12.3f %12s %12.2f %14.3f %9.1f%%" % (
                mode, t, "%.2f-%.2f" % (min(times[mode]), max(times[mode])),
                args.batch * size / t, unhidden, 100 * unhidden / t))
        for mode in ("hvd", "hvd-private"):
            w = waits.get(mode)
            if w:
                print("%s: step() waited %.3f s (median; range %.3f-%.3f) for allreduces after "
                      "backward" % (mode, statistics.median(w), min(w), max(w)))
        print("main thread CPU per step (median), rank 0 / ... / rank %d: " % (size - 1) + ", ".join(
            "%s %s" % (m, " / ".join("%.3f" % float(cpu_ranks[r, k]) for r in range(size)))
            for k, (m, _) in enumerate(modes)))
        print("replicas identical across ranks: hvd %s, hvd-private %s, ddp %s" % tuple(same))
    dist.destroy_process_group()
    hvd.shutdown()
    if not all(same):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
