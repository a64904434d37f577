"""One worker of the recovery tests and benchmark (run_recovery_test.py).

usage: recovery_worker.py WORKDIR MODEL STEPS KILL_STEP PHASE
  MODEL  small (8x8, float64: exact checks), w64 (64x64 float32) or
         w5000 (5000x5000 float32, 25M parameters + momentum: 200 MB of state)
  PHASE  backward | allreduce | commit | stall | current | ifneeded |
         ifneeded_step | async | broadcast_join | none
         (current: killed during backward, hvd.elastic.run(resume="current");
         ifneeded: killed with its allreduce submitted, ifneeded_step: killed
         after optimizer.step() before a loss allreduce that every worker runs
         then, both under hvd.elastic.run(restore="if_needed"); async and
         broadcast_join: killed with its allreduce submitted, run by
         run_recovery_test.py with HVD_ELASTIC_ASYNC_COMMIT=1 or
         HVD_ELASTIC_STREAM_JOIN=0)

Linear regression y = x @ W_true with SGD + momentum, committed every step.
Step s uses the fixed global batch of step s, split evenly among the ranks;
gradients are summed over all ranks and divided by the global batch, so the
update does not depend on the world size and every rank must end with the
same parameters. Worker 1 fails at step KILL_STEP (SIGKILL: in the middle of
backward, with its allreduce submitted, or inside commit(); SIGSTOP: stall).
The survivors go on at size 3; at step KILL_STEP + 10 they wait at their
commits for the replacement hvdrun started, which joins with their state.
Each worker appends "step size rank round time commit_seconds
broadcasts" per completed step to WORKDIR/log.<id> (broadcasts: how many
blocking broadcasts of the state, broadcast_parameters and
broadcast_optimizer_state, it took part in so far), the time it saw the
replacement's round at the join to WORKDIR/join_time.<id>, and writes its
final parameters to WORKDIR/final.<id>.pt; the victim writes the time of its
death to WORKDIR/kill_time.
"""
import logging
import os
import signal
import sys
import time

import torch

import hvd.torch as hvd
import hvd.torch.elastic as torch_elastic

workdir, model_kind, steps, kill_step, phase = sys.argv[1:6]
STEPS, KILL_STEP = int(steps), int(kill_step)
VICTIM = "1"
JOIN_STEP = KILL_STEP + 10
worker = os.environ["HVD_WORKER_ID"]
BATCH = 24
DIM = {"small": 8, "w64": 64, "w5000": 5000}[model_kind]
DTYPE = torch.float64 if model_kind == "small" else torch.float32
torch.set_num_threads(1)

w_true = torch.linspace(-1, 1, DIM * DIM, dtype=DTYPE).view(DIM, DIM)
model = torch.nn.Linear(DIM, DIM, bias=False).to(DTYPE)
with torch.no_grad():
    model.weight.zero_()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
state = hvd.elastic.TorchState(model, optimizer, step=0)


def batch(step, size, rank):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(BATCH, DIM, generator=g, dtype=DTYPE)
    per = BATCH // size
    lo = rank * per
    hi = BATCH if rank == size - 1 else lo + per  # the last rank takes the rest
    x = x[lo:hi]
    return x, x @ w_true.t()


def die(how=signal.SIGKILL):
    with open(os.path.join(workdir, "kill_time"), "w") as f:
        f.write("%.6f\n" % time.time())
    os.kill(os.getpid(), how)


# Where the victim dies, per phase.
KILL_POINT = {"current": "backward", "ifneeded": "allreduce", "ifneeded_step": "step",
              "async": "allreduce", "broadcast_join": "allreduce"}

# Count the blocking broadcasts of the state (sync()'s old path).
broadcasts = [0]


def counted(fn):
    def call(*args, **kwargs):
        broadcasts[0] += 1
        return fn(*args, **kwargs)
    return call


for _name in ("broadcast_parameters", "broadcast_optimizer_state"):
    if hasattr(torch_elastic, _name):
        setattr(torch_elastic, _name, counted(getattr(torch_elastic, _name)))


def victim_now(p):
    return worker == VICTIM and state.step == KILL_STEP and KILL_POINT.get(phase, phase) == p


logging.basicConfig(level=logging.INFO, format="%(created).3f %(name)s: %(message)s")
state.register_reset_callbacks(
    [lambda: logging.getLogger("worker").info("re-initialised at size %d", hvd.size())])


# resume= and restore= only where asked: the benchmark also runs older hvd builds.
def train(state):
    while state.step < STEPS:
        size, rank = hvd.size(), hvd.rank()
        if state.step == JOIN_STEP and size == 3:
            # The survivors went on without the replacement; here they wait
            # for it at their commits (it joins with the state of rank 0).
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    state.check_host_updates()
                except hvd.elastic.HostsUpdatedInterrupt:
                    with open(os.path.join(workdir, "join_time." + worker), "w") as f:
                        f.write("%.6f\n" % time.time())
                    raise
            raise RuntimeError("the replacement did not join within 120 s")
        x, y = batch(state.step, size, rank)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).sum()
        loss.backward()
        if victim_now("backward") or victim_now("current") or victim_now("stall"):
            die(signal.SIGSTOP if phase == "stall" else signal.SIGKILL)
        grad = model.weight.grad
        handle = hvd.allreduce_async(grad, op=hvd.Sum, name="grad")
        if victim_now("allreduce"):
            die()
        total = hvd.synchronize(handle)
        grad.copy_(total / BATCH)
        optimizer.step()
        if phase == "ifneeded_step":
            # A collective after the update: the survivors fail in it with
            # their parameters changed since the commit.
            if victim_now("step"):
                die()
            hvd.allreduce(loss.detach(), op=hvd.Sum, name="loss")
        state.step += 1
        if victim_now_commit():
            state.save()  # half of commit(): the broadcast never comes
            die()
        t_commit = time.perf_counter()
        try:
            state.commit()
        except hvd.elastic.HostsUpdatedInterrupt:
            if size == 3:  # the replacement joins here
                with open(os.path.join(workdir, "join_time." + worker), "w") as f:
                    f.write("%.6f\n" % time.time())
            raise
        t_commit = time.perf_counter() - t_commit
        with open(os.path.join(workdir, "log." + worker), "a") as f:
            f.write("%d %d %d %d %.6f %.6f %d\n" % (state.step - 1, size, rank,
                                                     hvd.elastic.current_round(), time.time(),
                                                     t_commit, broadcasts[0]))


if phase == "current":
    train = hvd.elastic.run(resume="current")(train)
elif phase.startswith("ifneeded"):
    train = hvd.elastic.run(restore="if_needed")(train)
else:
    train = hvd.elastic.run(train)


def victim_now_commit():
    return worker == VICTIM and state.step == KILL_STEP + 1 and phase == "commit"


hvd.init()
train(state)
torch.save({"step": state.step, "weight": model.weight.detach().clone(),
            "momentum": optimizer.state[model.weight]["momentum_buffer"].clone()},
           os.path.join(workdir, "final.%s.pt" % worker))
hvd.shutdown()
