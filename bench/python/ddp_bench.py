#!/usr/bin/env python3
"""ddp_bench: a ResNet-50 training step on CPU through hvd.torch's
DistributedOptimizer, the same with the PowerSGD comm hook, and
ZeroRedundancyOptimizer, in the same launch.

    mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH=build/python \\
        -x OMP_NUM_THREADS=1 /usr/bin/python3 bench/python/ddp_bench.py

Every rank builds ResNet-50 (torchvision's when it is installed, else the
same architecture defined here; random weights and data) once per mode from
the same seed and runs rounds of steps, the modes in turn:

  plain     DistributedOptimizer(SGD momentum), per-tensor allreduces;
  powersgd  the same with comm_hook=powerSGD_hook, rank --rank, from the
            first step (start_powerSGD_iter=0), 25 MB buckets;
  adam      DistributedOptimizer(Adam), the unsharded baseline for:
  zero      ZeroRedundancyOptimizer(Adam, stage 2).

Rank 0 prints per mode the median step time and the bytes per rank per
step handed to the collectives (allreduce input; reduce-scatter input plus
allgather input for ZeRO), and for adam/zero the optimizer-state and
gradient bytes each rank holds after a step.
"""
import argparse
import statistics
import time

import torch

import hvd.torch as hvd
from hvd.torch import comm_hooks


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50()
    except ImportError:
        pass
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            out = planes * 4
            self.body = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(True),
                nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes),
                nn.ReLU(True), nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out))
            self.down = None
            if stride != 1 or inplanes != out:
                self.down = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False),
                                          nn.BatchNorm2d(out))

        def forward(self, x):
            skip = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + skip)

    layers, inplanes = [], 64
    for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
            inplanes = planes * 4
    return nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
                         nn.MaxPool2d(3, 2, 1), *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(2048, 1000))


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors if torch.is_tensor(t))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=4, help="images per rank (default %(default)s)")
    p.add_argument("--image-size", type=int, default=64, help="pixels (default %(default)s)")
    p.add_argument("--rank", type=int, default=4, help="PowerSGD's rank (default %(default)s)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=3, help="timed steps per mode per round")
    p.add_argument("--modes", default="plain,powersgd,adam,zero")
    args = p.parse_args()

    torch.set_num_threads(1)
    hvd.init()
    rank = hvd.rank()
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=g)
    y = torch.randint(0, 1000, (args.batch,), generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()

    modes = {}
    for mode in args.modes.split(","):
        torch.manual_seed(0)
        model = resnet50()
        params = list(model.parameters())
        if mode == "plain":
            opt = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.01, momentum=0.9),
                                           named_parameters=model.named_parameters())
        elif mode == "powersgd":
            state = comm_hooks.PowerSGDState(matrix_approximation_rank=args.rank,
                                             start_powerSGD_iter=0)
            opt = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.01, momentum=0.9),
                                           named_parameters=model.named_parameters(),
                                           comm_hook=comm_hooks.powerSGD_hook,
                                           comm_hook_state=state)
        elif mode == "adam":
            opt = hvd.DistributedOptimizer(torch.optim.Adam(params, lr=1e-3),
                                           named_parameters=model.named_parameters())
        elif mode == "zero":
            opt = hvd.ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.Adam, lr=1e-3)
        else:
            raise SystemExit("unknown mode %s" % mode)
        modes[mode] = (model, opt, [])

    n_params = sum(p.numel() for p in modes[next(iter(modes))][0].parameters())
    param_bytes = 4 * n_params
    for rnd in range(args.rounds + 1):  # round 0: warm-up, untimed
        for mode, (model, opt, times) in modes.items():
            for _ in range(args.steps):
                comm_hooks.reset_payload_bytes()
                t0 = time.perf_counter()
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
                dt = time.perf_counter() - t0
                if rnd:
                    times.append(dt)
            if mode == "powersgd":
                psgd_bytes = comm_hooks.payload_bytes()  # this round's last step

    if rank == 0:
        print("ResNet-50, %d parameters (%.1f MiB), %d ranks, batch %d x %dpx per rank, "
              "median of %d steps" % (n_params, param_bytes / 2**20, hvd.size(), args.batch,
                                      args.image_size, args.rounds * args.steps))
    for mode, (model, opt, times) in modes.items():
        med = statistics.median(times)
        extra = ""
        if mode in ("plain", "adam"):
            wire = param_bytes
        elif mode == "powersgd":
            wire = psgd_bytes
            ratio, before, after = opt._hook_reducer._state.compression_stats()
            extra = "  compression %.1fx" % ratio
        else:  # reduce-scatter of every gradient, allgather of this rank's block
            wire = param_bytes + tensor_bytes(b.shard for b in opt._buckets)
        if mode in ("adam", "zero"):
            state = (opt.local_state_bytes() if mode == "zero"
                     else tensor_bytes(v for st in opt.state.values() for v in st.values()))
            grads = (tensor_bytes(b.shard.grad for b in opt._buckets) if mode == "zero"
                     else tensor_bytes(p.grad for p in model.parameters()))
            states = hvd.allgather_object(state, name="bench.state." + mode)
            extra = "  optimizer state per rank %s MiB, gradients %.1f MiB" % (
                "/".join("%.1f" % (s / 2**20) for s in states), grads / 2**20)
        if rank == 0:
            print("%-9s step %.3f s (%.3f-%.3f)  %.2f MiB per rank per step to collectives%s"
                  % (mode, med, min(times), max(times), wire / 2**20, extra), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
