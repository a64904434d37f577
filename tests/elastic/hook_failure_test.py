"""A lost peer surfaces inside backward, at the next gradient hook.

usage: hook_failure_test.py HVDRUN PYTHON       (the check: runs the job below)
       hook_failure_test.py --worker            (one rank, under hvdrun -np 3)

Every rank trains Linear -> Probe -> Linear -> Slow -> Linear with
hvd.torch.DistributedOptimizer for one good step. Then rank 1 SIGKILLs
itself, and the survivors run a second step. In its backward pass a
survivor submits the last layer's gradients (the loss may not be known
yet), computes in Slow until its background loop has learned of the loss
(those submissions failed), and then the middle layer's hook submits:
that submission must fail at once, so loss.backward() raises
HvdPeerLostError naming rank 1 there, and autograd stops: Probe's backward and the first layer's hooks
never run (a training loop under hvd.elastic.run starts recovering then,
not after the whole backward and optimizer.step()).
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
VICTIM = 1
SLOW_SECONDS = 0.4


def worker():
    import torch

    import hvd.torch as hvd

    signal.signal(signal.SIGTERM, lambda *_: None)  # report before hvdrun's SIGKILL
    torch.set_num_threads(1)
    hvd.init()
    rank = hvd.rank()
    probe_calls = []
    after_kill = []  # set once the victim is dead
    opts = []

    class Slow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            # The survivor's compute (no hvd call). After the kill it lasts
            # until the gradients submitted before it have failed, i.e. its
            # background loop has learned of the loss (at most 60 s: on a
            # loaded machine that can take a second or more).
            time.sleep(SLOW_SECONDS)
            deadline = time.time() + 60
            while after_kill and time.time() < deadline and not all(
                    h[0] is None or h[0].poll() for h in opts[0]._handles.values()):
                time.sleep(0.01)
            return g

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            probe_calls.append(time.time())
            return g

    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 8).double() for _ in range(3)]

    def model(x):
        h = layers[0](x)
        h = Probe.apply(h)
        h = layers[1](h)
        h = Slow.apply(h)
        return layers[2](h)

    params = [("l%d.%s" % (i, n), p)
              for i, layer in enumerate(layers) for n, p in layer.named_parameters()]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=0.1),
                                   named_parameters=params)
    opts.append(opt)
    x = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(rank))

    opt.zero_grad()
    model(x).pow(2).sum().backward()
    opt.step()  # one good step: everyone past init, hooks warm
    if rank == VICTIM:
        print("HF rank=%d killing itself at=%.6f" % (rank, time.time()), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    after_kill.append(True)
    probe_calls.clear()
    opt.zero_grad()
    loss = model(x).pow(2).sum()
    start = time.time()
    where, what = "nowhere", ""
    try:
        loss.backward()
        where = "after-backward"
        opt.step()
    except Exception as exc:  # noqa: BLE001 - the type is what is checked
        where = "backward" if where == "nowhere" else "step"
        what = "%s: %s" % (type(exc).__name__, exc)
    print("HF rank=%d raised_in=%s after=%.3f probe_ran=%d error=%s" %
          (rank, where, time.time() - start, len(probe_calls), what.replace("\n", " ")),
          flush=True)
    os._exit(0)  # the world is broken: no hvd.shutdown() negotiation


def check(hvdrun, python):
    env = dict(os.environ, OMP_NUM_THREADS="1", HVD_GLOO_TIMEOUT_SECONDS="20")
    proc = subprocess.run([hvdrun, "--grace-period", "30", "-np", "3", python, HERE, "--worker"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=240)
    out = proc.stdout
    print(out)
    failures = []
    if "HF rank=%d killing itself" % VICTIM not in out:
        failures.append("rank %d did not announce its death" % VICTIM)
    for r in (0, 2):
        lines = [l for l in out.splitlines() if ("HF rank=%d raised_in=" % r) in l]
        if not lines:
            failures.append("rank %d reported nothing" % r)
            continue
        line = lines[0]
        if "raised_in=backward " not in line:
            failures.append("rank %d: the failure did not surface inside backward: %s" % (r, line))
        if "probe_ran=0 " not in line:
            failures.append("rank %d: autograd went on after the failed hook: %s" % (r, line))
        if "error=HvdPeerLostError: " not in line or ("rank %d (host " % VICTIM) not in line:
            failures.append("rank %d: not HvdPeerLostError naming rank %d and its host: %s" %
                            (r, VICTIM, line))
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        check(sys.argv[1], sys.argv[2])
