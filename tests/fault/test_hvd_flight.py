#!/usr/bin/python3
"""hvd_flight on synthetic flight records: each kind of divergence, a ring
that wrapped on one rank, and records that agree (exit 1).

    test_hvd_flight.py HVD_FLIGHT_PY
"""
import json
import os
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]


def op(seq, name, shape=(4,), dtype="float32", kind="allreduce", state="done", status=0, t=1000.0):
    o = {"seq": seq, "set": 0, "set_seq": seq - 1, "name": name, "kind": kind, "dtype": dtype,
         "ndim": len(shape), "shape": list(shape), "bytes": 16, "state": state, "status": status,
         "submitted_ms": t + seq}
    if state == "done":
        o.update(negotiated_ms=t + seq + 0.5, executing_ms=t + seq + 0.5, done_ms=t + seq + 0.6)
    return o


def run(ranks, size=None):
    with tempfile.TemporaryDirectory() as d:
        for r, ops in ranks.items():
            with open(os.path.join(d, f"hvd_flight.rank{r}.json"), "w") as f:
                json.dump({"format": "hvd-flight-1", "rank": r, "size": size or len(ranks),
                           "host": "h", "pid": 1, "reason": "test", "dumped_at_ms": 2000.0,
                           "capacity": 1024, "submitted": len(ops), "ops": ops}, f)
        p = subprocess.run([sys.executable, TOOL, d], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


failures = 0


def check(what, cond, out):
    global failures
    print(("ok: " if cond else "FAILED: ") + what)
    if not cond:
        failures += 1
        print(out)


good = [op(1, "a"), op(2, "b")]
rc, out = run({0: good, 1: good})
check("records that agree: exit 1, no culprit", rc == 1 and "culprit" not in out, out)

rc, out = run({0: good + [op(3, "c", state="submitted")], 1: good + [op(3, "c", (5,), state="submitted")],
               2: good + [op(3, "c", state="submitted")]})
check("a different shape names the odd rank", rc == 0 and "different kind, dtype or shape" in out
      and "culprit: rank 1\n" in out and "[5]" in out, out)

rc, out = run({0: good + [op(3, "c", dtype="float64", state="submitted")],
               1: good + [op(3, "c", state="submitted")], 2: good + [op(3, "c", state="submitted")]})
check("a different dtype names the odd rank", "culprit: rank 0\n" in out, out)

rc, out = run({0: good + [op(3, "c", state="submitted")], 1: good,
               2: good + [op(3, "c", state="submitted")]})
check("a rank that never submitted it", "never submitted it" in out and "culprit: rank 1\n" in out,
      out)

rc, out = run({0: good + [op(3, "c", state="submitted")], 2: good + [op(3, "c", state="submitted")]},
              size=3)
check("a rank without a record", "left no flight record" in out and "culprit: rank 1\n" in out, out)

# Rank 0's ring kept only its last two operations; the comparison starts
# where every ring has entries and still finds #4.
rc, out = run({0: [op(3, "c"), op(4, "d", state="submitted")],
               1: good + [op(3, "c"), op(4, "e", state="submitted")],
               2: good + [op(3, "c"), op(4, "d", state="submitted")]})
check("a wrapped ring: the divergence at #3 (0-based) and its order",
      "operation #3: a different order" in out and "culprit: rank 1\n" in out, out)

rc, out = run({0: good}, size=1)
check("one rank, nothing to compare", rc == 1, out)
sys.exit(1 if failures else 0)
