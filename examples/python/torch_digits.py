#!/usr/bin/env python3
"""Data-parallel training of a small MLP on scikit-learn's digits with hvd.

    mpirun -np 2 /usr/bin/python3 examples/python/torch_digits.py
    hvdrun -np 2 /usr/bin/python3 examples/python/torch_digits.py

(with PYTHONPATH=<build>/python unless hvd is installed). Every rank trains
on its own shard of each epoch's batches; DistributedOptimizer averages the
gradients, so all ranks keep identical weights. Rank 0 prints the loss and
held-out accuracy per epoch; the exit status is non-zero on every rank if
the final accuracy is below --target.

--data examples/data/digits.txt reads the same images from the file that the
C++ twin (examples/cpp/torch_digits.cc) uses; --save-init and --save write
the weights after the broadcast and after training (raw float32, parameter
by parameter), and --init reads such a file: with them tests/cpp checks that
both programs train to the same weights.
"""
import argparse
import sys

import numpy as np
import torch

import hvd.torch as hvd


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05, help="per rank; scaled by size")
    p.add_argument("--target", type=float, default=0.95, help="minimum held-out accuracy")
    p.add_argument("--fp16-allreduce", action="store_true")
    p.add_argument("--data", help="digits.txt instead of scikit-learn's copy")
    p.add_argument("--init", help="start from these weights")
    p.add_argument("--save-init", help="rank 0 writes the initial weights here")
    p.add_argument("--save", help="rank 0 writes the final weights here")
    return p.parse_args()


def read_digits(path):
    """examples/data/digits.txt: a label and 64 pixels (0..16 as 0-9a-g) per line."""
    with open(path, encoding="ascii") as f:
        rows = [line.strip() for line in f if not line.startswith("#") and line.strip()]
    data = np.array([[int(c, 17) for c in row[1:]] for row in rows], dtype=np.float64)
    return data, np.array([int(row[0]) for row in rows])


def load_data(path=None):
    """Bundled with scikit-learn, no download: 1797 8x8 images. The same
    fixed split on every rank; 20% held out."""
    if path:
        data, target = read_digits(path)
    else:
        from sklearn.datasets import load_digits
        digits = load_digits()
        data, target = digits.data, digits.target
    x = torch.tensor(data / 16.0, dtype=torch.float32)
    y = torch.tensor(target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def save_weights(model, path):
    torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy().tofile(path)


def main():
    args = parse_args()
    torch.set_num_threads(1)  # ranks share the cores
    hvd.init()
    rank, size = hvd.rank(), hvd.size()

    x_train, y_train, x_test, y_test = load_data(args.data)
    torch.manual_seed(rank)  # deliberately different; broadcast below fixes it
    model = make_model()
    if args.init:
        weights = torch.from_numpy(np.fromfile(args.init, dtype=np.float32))
        if weights.numel() != sum(p.numel() for p in model.parameters()):
            raise SystemExit("%s does not hold this model's %d weights"
                             % (args.init, sum(p.numel() for p in model.parameters())))
        with torch.no_grad():
            offset = 0
            for p in model.parameters():
                p.copy_(weights[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
    # Linear scaling: the global batch is size times bigger.
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * size, momentum=0.9)
    opt = hvd.DistributedOptimizer(
        opt, named_parameters=model.named_parameters(),
        compression=hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    if args.save_init and rank == 0:
        save_weights(model, args.save_init)

    # Equal batch counts on all ranks (a rank with an extra batch would wait
    # for the others in its allreduce).
    global_batch = args.batch_size * size
    steps = len(x_train) // global_batch
    accuracy = 0.0
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
        total = torch.zeros(1)
        for step in range(steps):
            batch = perm[step * global_batch:(step + 1) * global_batch][rank::size]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
            loss.backward()
            opt.step()
            total += loss.detach()
        mean_loss = hvd.allreduce(total / steps, name="epoch_loss").item()

        model.eval()
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
        if rank == 0:
            print("epoch %2d  loss %.4f  held-out accuracy %.4f" % (epoch + 1, mean_loss, accuracy),
                  flush=True)

    if args.save and rank == 0:
        save_weights(model, args.save)

    # Every rank decides on rank 0's number, so all exit the same way.
    accuracy = hvd.broadcast_object(accuracy, root_rank=0)
    if rank == 0:
        print("final held-out accuracy %.4f (target %.2f, %d ranks)" % (accuracy, args.target, size),
              flush=True)
    hvd.shutdown()
    return 0 if accuracy >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
