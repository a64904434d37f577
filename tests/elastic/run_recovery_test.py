"""Recovery in place under hvdrun (see recovery_worker.py).

usage: run_recovery_test.py HVDRUN PYTHON CASE [MODEL STEPS [PHASE]]
  CASE backward | allreduce | commit | stall: 4 workers (-np 4 --min-np 2
       --max-np 4), worker 1 fails at step 6; checks that the survivors go on
       at once at size 3 (no relaunch, no wait for the replacement), that the
       replacement hvdrun starts joins later at size 4 with the state of a
       live peer, that every worker ends with exactly the same parameters,
       and that they equal a fault-free run (float64, 1e-9).
  CASE ifneeded | ifneeded_step: as above under
       hvd.elastic.run(restore="if_needed"), killed with its allreduce
       submitted (the survivors must copy nothing back) or after
       optimizer.step() (they must copy the weight and momentum back).
  CASE async: as allreduce with TorchState's asynchronous commit
       (HVD_ELASTIC_ASYNC_COMMIT=1).
  CASE broadcast_join: as allreduce with the replacement's state sent by
       the old blocking broadcast (HVD_ELASTIC_STREAM_JOIN=0); every other
       case checks that the survivors take part in no blocking broadcast
       after the first sync (the commit is streamed to the replacement).
  CASE bench MODEL STEPS [PHASE]: prints the step time, the commit time, the
       time from the kill to the next completed step on every survivor and,
       when STEPS > 17, the survivors' join step (from seeing the
       replacement's round to their first completed step with it) (MODEL
       w64 or w5000; PHASE allreduce, the default, or ifneeded). The
       environment passes through: HVD_ELASTIC_ASYNC_COMMIT=1,
       HVD_ELASTIC_STREAM_JOIN=0.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
KILL_STEP = 6
# The phases whose victim dies with its allreduce submitted (recovery_worker.py's KILL_POINT).
KILLED_IN_ALLREDUCE = ("allreduce", "ifneeded", "async", "broadcast_join")


def fail(message, output=""):
    sys.stderr.write(output)
    sys.exit("FAIL: " + message)


def run_job(hvdrun, python, workdir, model, steps, phase, extra_env=None, timeout=280):
    cmd = [hvdrun, "-np", "4", "--min-np", "2", "--max-np", "4", python,
           os.path.join(HERE, "recovery_worker.py"), workdir, model, str(steps), str(KILL_STEP),
           phase]
    env = dict(os.environ, OMP_NUM_THREADS="1", HVD_GLOO_TIMEOUT_SECONDS="60")
    env.update(extra_env or {})
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)
    print("hvdrun took %.1f s" % (time.monotonic() - start))
    if proc.returncode != 0:
        fail("hvdrun exited with %d" % proc.returncode, proc.stdout)
    return proc.stdout


def read_log(workdir, worker):
    path = os.path.join(workdir, "log.%d" % worker)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(int(a), int(b), int(c), int(d), float(t), float(c_s), int(n))
                for a, b, c, d, t, c_s, n in (line.split() for line in f)]


def kill_time(workdir):
    with open(os.path.join(workdir, "kill_time")) as f:
        return float(f.read())


def recovery(workdir, survivors):
    """Seconds from the kill to the first step completed in the new world, per
    survivor (a step may still complete in the old world just after the kill:
    the victim's data was sent before it died)."""
    t0 = kill_time(workdir)
    out = {}
    for w in survivors:
        rows = read_log(workdir, w)
        old_round = max(r[3] for r in rows if r[4] <= t0)
        out[w] = min(r[4] for r in rows if r[3] > old_round) - t0
    return out


def join_step(workdir, survivors):
    """Per survivor: seconds from seeing the replacement's round (at a
    commit) to its first completed step at size 4: re-initialisation, sync
    and one step with the replacement."""
    out = {}
    for w in survivors:
        path = os.path.join(workdir, "join_time.%d" % w)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            t0 = float(f.read())
        done = [r[4] for r in read_log(workdir, w) if r[1] == 4 and r[4] > t0]
        if done:
            out[w] = min(done) - t0
    return out


def step_time(workdir):
    times = [r[4] for r in read_log(workdir, 0) if 1 <= r[0] < KILL_STEP]
    return statistics.median(b - a for a, b in zip(times, times[1:]))


def reference(steps):
    """The same training in one process (float64, the full batch)."""
    dim, batch = 8, 24
    w_true = torch.linspace(-1, 1, dim * dim, dtype=torch.float64).view(dim, dim)
    model = torch.nn.Linear(dim, dim, bias=False).to(torch.float64)
    with torch.no_grad():
        model.weight.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for step in range(steps):
        x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(step),
                        dtype=torch.float64)
        opt.zero_grad()
        ((model(x) - x @ w_true.t()) ** 2).sum().backward()
        model.weight.grad.div_(batch)
        opt.step()
    return model.weight.detach(), w_true


def case_fault(hvdrun, python, phase):
    steps = 40
    extra = {"stall": {"HVD_ELASTIC_LIVENESS_SECONDS": "2"},
             "async": {"HVD_ELASTIC_ASYNC_COMMIT": "1"},
             "broadcast_join": {"HVD_ELASTIC_STREAM_JOIN": "0"}}.get(phase, {})
    with tempfile.TemporaryDirectory() as workdir:
        out = run_job(hvdrun, python, workdir, "small", steps, phase, extra)
        survivors, replacement = [0, 2, 3], 4
        # Killed with its allreduce submitted, the victim may have sent its
        # part before it died: the survivors then finish step KILL_STEP in the
        # old world, and commit() saves it before its broadcast fails, so they
        # resume after it (as Horovod's commit does) and its log line, written
        # once commit() returns, never comes. The parameters are checked below.
        unlogged = KILL_STEP if phase in KILLED_IN_ALLREDUCE else None
        for w in survivors:
            rows = read_log(workdir, w)
            done = [r[0] for r in rows]
            expect = [s for s in range(steps) if not (phase == "commit" and s == KILL_STEP)]
            if done != expect and done != [s for s in expect if s != unlogged]:
                fail("worker %d completed steps %s, expected %s" % (w, done, expect), out)
            after = [r for r in rows if r[0] > KILL_STEP]
            if after[0][1] != 3:
                fail("worker %d's first step after the failure ran at size %d, not 3 (the "
                     "survivors must not wait for the replacement)" % (w, after[0][1]), out)
            if rows[-1][1] != 4:
                fail("worker %d ended at size %d; the replacement never joined" %
                     (w, rows[-1][1]), out)
        joined = read_log(workdir, replacement)
        if not joined or joined[0][1] != 4 or joined[-1][0] != steps - 1:
            fail("the replacement's steps: %s" % [r[:4] for r in joined], out)
        # Blocking broadcasts of the state (parameters, optimizer state):
        # two at the first sync; at the join two more (old path) or none:
        # the commit is streamed.
        want = 4 if phase == "broadcast_join" else 2
        for w in survivors:
            took = read_log(workdir, w)[-1][6]
            if took != want:
                fail("worker %d took part in %d blocking broadcasts of the state, expected %d" %
                     (w, took, want), out)
        if joined[-1][6] != (2 if phase == "broadcast_join" else 0):
            fail("the replacement took part in %d blocking broadcasts" % joined[-1][6], out)
        streamed = "streaming the commit" in out
        if streamed == (phase == "broadcast_join"):
            fail("rank 0 %s the commit to the replacement" %
                 ("streamed" if streamed else "did not stream"), out)
        finals = {w: torch.load(os.path.join(workdir, "final.%d.pt" % w))
                  for w in survivors + [replacement]}
        for w, f in finals.items():
            for key in ("weight", "momentum"):
                if not torch.equal(f[key], finals[0][key]):
                    fail("worker %d's %s differs from worker 0's" % (w, key), out)
        if phase == "current" and "every survivor holds the same state" not in out:
            fail("resume='current' did not keep the current state", out)
        if phase.startswith("ifneeded"):
            # Worker 0 survives; what its restore copied back (weight, momentum).
            want = ("0 tensors copied back, 2 unchanged since the commit kept"
                    if phase == "ifneeded" else
                    "2 tensors copied back, 0 unchanged since the commit kept")
            seen = [l for l in out.splitlines()
                    if l.startswith("[0]<stderr>:") and "restore if needed:" in l]
            if not seen or want not in seen[0]:
                fail("worker 0's restore: %s, expected %r" % (seen, want), out)
        rec = recovery(workdir, survivors)
        print("recovery (kill to next completed step) per survivor: %s" %
              {w: round(t, 3) for w, t in rec.items()})
        if "HVD_RECOVERY_BUDGET" in os.environ and max(rec.values()) > float(
                os.environ["HVD_RECOVERY_BUDGET"]):
            fail("recovery took %.2f s" % max(rec.values()), out)
    ref, w_true = reference(steps)
    err = (finals[0]["weight"] - ref).abs().max().item()
    print("max abs diff to the fault-free run %g; distance to the solution %g" %
          (err, (ref - w_true).abs().max().item()))
    if err > 1e-9:
        fail("the parameters differ from a fault-free run by %g" % err)
    if (finals[0]["weight"] - w_true).abs().max().item() > 1e-3:
        fail("training did not converge")


def case_bench(hvdrun, python, model, steps, phase):
    with tempfile.TemporaryDirectory() as workdir:
        out = run_job(hvdrun, python, workdir, model, steps, phase, timeout=580)
        rec = recovery(workdir, [0, 2, 3])
        commit = statistics.median(r[5] for r in read_log(workdir, 0) if r[0] < KILL_STEP)
        print("model %s: step %.3f s, commit %.3f s, recovery (kill to next completed step) "
              "%.3f s (per survivor %s)" % (model, step_time(workdir), commit, max(rec.values()),
                                            {w: round(t, 3) for w, t in rec.items()}))
        joins = join_step(workdir, [0, 2, 3])
        if joins:
            log0 = read_log(workdir, 0)
            after = [b[4] - a[4] for a, b in zip(log0, log0[1:])
                     if a[1] == b[1] == 4 and a[0] > KILL_STEP + 10]
            print("join step (replacement's round seen to first step at size 4) %.3f s, then "
                  "steps of %.3f s (per survivor %s)" % (
                      max(joins.values()), statistics.median(after) if after else float("nan"),
                      {w: round(t, 3) for w, t in joins.items()}))
        t0 = kill_time(workdir)
        for line in out.splitlines():
            if line.startswith("hvdrun:"):
                print("  " + line)
            # Worker 0's view, relative to the kill: when it saw the failure
            # and when it had re-formed the world.
            for what in ("collective failed", "restore if needed", "re-initialised"):
                if line.startswith("[0]<stderr>:") and what in line:
                    stamp = float(line[len("[0]<stderr>:"):].split()[0])
                    print("  worker 0: %s at kill %+.3f s" % (what, stamp - t0))


def main():
    hvdrun, python, case = sys.argv[1:4]
    if case == "bench":
        case_bench(hvdrun, python, sys.argv[4], int(sys.argv[5]),
                   sys.argv[6] if len(sys.argv) > 6 else "allreduce")
    elif case in ("backward", "allreduce", "commit", "stall", "current", "ifneeded",
                  "ifneeded_step", "async", "broadcast_join"):
        case_fault(hvdrun, python, case)
    else:
        fail("unknown case " + case)
    print("PASS")


if __name__ == "__main__":
    main()
