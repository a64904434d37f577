"""End-to-end tests of elastic training under hvdrun (see elastic_train.py).

usage: run_elastic_test.py HVDRUN PYTHON CASE   (CASE: train | below_min)

train:     3 workers, one SIGKILLed at step 6, a host added back at step 10;
           checks the exit code, the exact step/size schedule of every
           worker, and the final weights against a fault-free reference.
below_min: a worker fails and fewer than --min-np remain; hvdrun must stop
           the job after --elastic-timeout with a clear message (no hang).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, LR, MOMENTUM = 20, 12, 0.05, 0.9


def fail(message, output=""):
    sys.stderr.write(output)
    sys.exit("FAIL: " + message)


def reference():
    """The same training without hvd: full batches, float64."""
    import numpy as np
    rng = np.random.RandomState(0)
    x = rng.randn(240, 3)
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.1 * rng.randn(240)
    w, b = np.zeros(3), 0.0
    mw, mb = np.zeros(3), 0.0
    for step in range(STEPS):
        s = (step * BATCH) % len(x)
        xb, yb = x[s:s + BATCH], y[s:s + BATCH]
        r = xb @ w + b - yb
        gw, gb = 2 * xb.T @ r / BATCH, 2 * r.sum() / BATCH
        mw, mb = (gw, gb) if step == 0 else (MOMENTUM * mw + gw, MOMENTUM * mb + gb)
        w, b = w - LR * mw, b - LR * mb
    return w, b


def read_log(workdir, worker):
    path = os.path.join(workdir, "log.%d" % worker)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(int(v) for v in line.split()) for line in f]


def case_train(hvdrun, python):
    with tempfile.TemporaryDirectory() as workdir:
        with open(os.path.join(workdir, "hosts.txt"), "w") as f:
            f.write("localhost:2\n127.0.0.1:1\n")
        cmd = [hvdrun, "--min-np", "2", "--max-np", "3",
               "--host-discovery-script", "cat " + os.path.join(workdir, "hosts.txt"),
               "--elastic-timeout", "60", "--blacklist-cooldown", "5",
               python, os.path.join(HERE, "elastic_train.py"), workdir]
        env = dict(os.environ, HVD_GLOO_TIMEOUT_SECONDS="30", OMP_NUM_THREADS="1")
        start = time.monotonic()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=240)
        out = proc.stdout
        print("hvdrun took %.1f s" % (time.monotonic() - start))
        if proc.returncode != 0:
            fail("hvdrun exited with %d" % proc.returncode, out)
        for needle in ("elastic round 0 with 3 workers", "elastic round 1 with 2 workers",
                       "elastic round 2 with 3 workers"):
            if needle not in out:
                fail("hvdrun's output lacks %r" % needle, out)
        # Worker 2 removes its host, then kills itself: hvdrun sees one or
        # the other first.
        if ("worker 2 (rank 2) on host 127.0.0.1 exited with code 137" not in out and
                "host 127.0.0.1 left the host list; stopping worker 2 there" not in out):
            fail("hvdrun did not report the loss of worker 2", out)
        if "elastic round 3" in out:
            fail("hvdrun formed more rounds than the schedule needs", out)
        # (step, size, rank, round) per worker: no committed step lost or
        # repeated, the sizes follow the schedule, worker 3 starts at step 10.
        expect = {
            0: [(s, 3, 0, 0) for s in range(6)] + [(s, 2, 0, 1) for s in range(6, 10)] +
               [(s, 3, 0, 2) for s in range(10, 20)],
            1: [(s, 3, 1, 0) for s in range(6)] + [(s, 2, 1, 1) for s in range(6, 10)] +
               [(s, 3, 1, 2) for s in range(10, 20)],
            2: [(s, 3, 2, 0) for s in range(6)],
            3: [(s, 3, 2, 2) for s in range(10, 20)],
        }
        for worker, rows in expect.items():
            got = read_log(workdir, worker)
            if got != rows:
                fail("worker %d's steps (step, size, rank, round):\n  got    %s\n  expect %s"
                     % (worker, got, rows), out)
        with open(os.path.join(workdir, "final.json")) as f:
            final = json.load(f)
    w, b = reference()
    if final["step"] != STEPS:
        fail("final step %d != %d" % (final["step"], STEPS))
    err = max([abs(a - c) for a, c in zip(final["weight"], w)] + [abs(final["bias"] - b)])
    print("final weights", final["weight"], final["bias"], "reference", list(w), b,
          "max abs diff", err)
    if err > 1e-9:
        fail("final model differs from the reference by %g" % err)


def case_below_min(hvdrun):
    # Every worker but the first fails: the free slot is refilled once, then
    # localhost is blacklisted after its second failure and 1 < --min-np.
    worker = ('if [ "$HVD_WORKER_ID" != 0 ]; then sleep 0.5; exit 3; fi; '
              'trap "exit 0" TERM; while :; do sleep 0.1; done')
    cmd = [hvdrun, "--elastic", "-np", "2", "--min-np", "2", "--elastic-timeout", "2",
           "--blacklist-cooldown", "30", "sh", "-c", worker]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60)
    took = time.monotonic() - start
    print("hvdrun took %.1f s, exit %d" % (took, proc.returncode))
    if proc.returncode != 1:
        fail("expected exit code 1, got %d" % proc.returncode, proc.stdout)
    for needle in ("worker 1 (rank 1) on host localhost exited with code 3",
                   "workers on host localhost keep failing; no new workers there for 30 s",
                   "fewer than --min-np 2; waiting up to 2 s",
                   "only 1 workers, fewer than --min-np 2, and no new hosts within "
                   "--elastic-timeout; stopping the job"):
        if needle not in proc.stdout:
            fail("hvdrun's output lacks %r" % needle, proc.stdout)
    if not 2 <= took < 20:
        fail("hvdrun stopped after %.1f s; expected about --elastic-timeout (2 s)" % took)


def main():
    hvdrun, python, case = sys.argv[1:4]
    if case == "train":
        case_train(hvdrun, python)
    elif case == "below_min":
        case_below_min(hvdrun)
    else:
        fail("unknown case " + case)
    print("PASS")


if __name__ == "__main__":
    main()
