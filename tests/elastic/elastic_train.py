"""One worker of the elastic end-to-end test (run by run_elastic_test.py).

Linear regression with SGD + momentum on fixed data. Step s uses the fixed
global batch DATA[12*s % N : +12], split evenly among the ranks; gradients
are summed over all ranks and divided by 12, so the update does not depend
on the world size and the final weights equal a fault-free run.

Schedule (worker ids are given by hvdrun in start order):
  steps 0-5  3 workers; at the start of step 6 worker 2 removes its host
             (127.0.0.1) from the host list and SIGKILLs itself;
  steps 6-9  the 2 survivors, restored to the commit after step 5;
  step 10    rank 0 adds 127.0.0.1 back; the ranks wait at commits until
             hvdrun starts worker 3 and publishes the new round;
  steps 10-19 3 workers, worker 3 got the state from rank 0 (streamed).
Each worker appends "step size rank round" for every completed step to
WORKDIR/log.<worker id>; rank 0 writes WORKDIR/final.json at the end.
"""
import json
import os
import signal
import sys
import time

import numpy as np
import torch

import hvd.torch as hvd  # Horovod's spelling: hvd.elastic.run, hvd.elastic.TorchState

STEPS = 20
BATCH = 12
KILL_STEP = 6
ADD_STEP = 10
LR = 0.05
MOMENTUM = 0.9

workdir = sys.argv[1]
worker = os.environ["HVD_WORKER_ID"]


def data():
    rng = np.random.RandomState(0)
    x = rng.randn(240, 3)
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.1 * rng.randn(240)
    return x, y


def write_hosts(lines):
    path = os.path.join(workdir, "hosts.txt")
    with open(path + ".tmp", "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(path + ".tmp", path)  # the discovery script never sees half a file


X, Y = data()
torch.set_default_dtype(torch.float64)
model = torch.nn.Linear(3, 1)
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
state = hvd.elastic.TorchState(model, optimizer, step=0)


@hvd.elastic.run
def train(state):
    while state.step < STEPS:
        size, rank = hvd.size(), hvd.rank()
        if worker == "2" and state.step == KILL_STEP:
            write_hosts(["localhost:2"])
            os.kill(os.getpid(), signal.SIGKILL)
        if size == 2 and state.step == ADD_STEP:
            if rank == 0:
                write_hosts(["localhost:2", "127.0.0.1:1"])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                time.sleep(0.1)
                state.check_host_updates()  # raises HostsUpdatedInterrupt
            raise RuntimeError("hvdrun did not add the worker within 60 s")
        start = (state.step * BATCH) % len(X)
        per_rank = BATCH // size
        rows = slice(start + rank * per_rank, start + (rank + 1) * per_rank)
        x, y = torch.from_numpy(X[rows]), torch.from_numpy(Y[rows])
        optimizer.zero_grad()
        loss = ((model(x).squeeze(1) - y) ** 2).sum()
        loss.backward()
        for name, p in model.named_parameters():
            total = hvd.allreduce(p.grad, op=hvd.Sum, name="grad." + name)
            p.grad.copy_(total / BATCH)
        optimizer.step()
        with open(os.path.join(workdir, "log." + worker), "a") as f:
            f.write("%d %d %d %d\n" % (state.step, size, rank, hvd.elastic.current_round()))
        state.step += 1
        state.commit()


hvd.init()
train(state)
if hvd.rank() == 0:
    with open(os.path.join(workdir, "final.json"), "w") as f:
        json.dump({"step": state.step, "weight": model.weight.detach().view(-1).tolist(),
                   "bias": float(model.bias.detach())}, f)
hvd.shutdown()
