#!/usr/bin/python3
"""Checks hvd_timeline's numbers on the file timeline.tool_input left: the
sequence of timeline_prog's `basic` mode with 2 ranks (see run_checks.py)."""
import json
import os
import subprocess
import sys
import tempfile

tool, path = sys.argv[1], sys.argv[2]


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        sys.exit(1)


def run(*args):
    p = subprocess.run([tool] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    check(p.returncode == 0, "hvd_timeline %s failed: %s" % (" ".join(args), p.stderr))
    return p.stdout


s = json.loads(run("--json", path))
ops = s["ops"]
# fused.a [4] + fused.b [2,3] + fused.c [5] + 3 x single [8], float32.
check(ops["ALLREDUCE"]["count"] == 6, "ALLREDUCE count %r" % ops["ALLREDUCE"])
check(ops["ALLREDUCE"]["bytes"] == 4 * (4 + 6 + 5 + 3 * 8), "ALLREDUCE bytes %r" % ops["ALLREDUCE"])
check(ops["ALLGATHER"]["count"] == 1 and ops["ALLGATHER"]["bytes"] == 8, "ALLGATHER %r" % ops["ALLGATHER"])
check(ops["BROADCAST"]["count"] == 1 and ops["BROADCAST"]["bytes"] == 12, "BROADCAST %r" % ops["BROADCAST"])
check(set(ops) == {"ALLREDUCE", "ALLGATHER", "BROADCAST"}, "op types %r" % sorted(ops))
for k, v in list(ops.items()) + list(s["activities"].items()):
    check(v["total_us"] >= 0 and abs(v["mean_us"] - v["total_us"] / v["count"]) < 1e-2, "%s mean %r" % (k, v))
acts = s["activities"]
check(acts["QUEUE"]["count"] == 8, "QUEUE count %r" % acts["QUEUE"])
check(acts["MPI_ALLREDUCE"]["count"] == 6, "MPI_ALLREDUCE %r" % acts["MPI_ALLREDUCE"])
# Through a fusion buffer (MPI) or straight from the tensors (shared memory).
check(acts.get("MEMCPY_IN_FUSION_BUFFER", {"count": 3})["count"] == 3, "MEMCPY_IN %r" % acts)
f = s["fusion"]
check(f["groups"] == 1 and f["sizes"] == {"3": 1}, "fusion %r" % f)
check(f["members"] == [["fused.a", "fused.b", "fused.c"]], "fused members %r" % f["members"])
n = s["negotiation"]
check(set(n) == {"fused.a", "fused.b", "fused.c", "single", "gather", "bcast"}, "negotiated %r" % sorted(n))
for k, v in n.items():
    # Each negotiated once (single's repeats are cache hits); the last rank ready is 0 or 1.
    check(v["count"] == 1 and sum(v["last_rank"].values()) == 1 and set(v["last_rank"]) <= {"0", "1"},
          "negotiation of %s: %r" % (k, v))
check(s["tensors"] == 6 and s["cycles"] == 0, "tensors/cycles %r" % s)

text = run(path)
check("ALLREDUCE" in text and "fused groups: 1" in text and "negotiation wait" in text, "text output:\n" + text)

# A file cut mid-event (what an old-style writer leaves) is still summarised.
with open(path) as fin:
    body = fin.read()
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
    tmp.write(body[: len(body) * 2 // 3])
try:
    t = json.loads(run("--json", tmp.name))
    check(0 < t["events"] < s["events"], "truncated: %r events" % t["events"])
finally:
    os.remove(tmp.name)
print("PASS: hvd_timeline")
