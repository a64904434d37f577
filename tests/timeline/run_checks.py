#!/usr/bin/python3
"""Runs timeline_prog under a launcher and checks what it leaves behind.

One check per ctest (see CMakeLists.txt). Each check launches the job itself
(so it controls the environment and the files), then parses the timeline with
json.load and asserts exact events, or matches stderr for the stall inspector
and logging checks. Exit status 0 = pass; a failure prints why.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

ARGS = None


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def launch(np, prog_args, env_extra, timeout=120, gloo=False):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("HVD_", "HOROVOD_")):
            del env[k]
    env.update(env_extra)
    if gloo:
        env.update({"HVD_CONTROLLER": "gloo", "HVD_CPU_OPERATIONS": "gloo"})
        cmd = [ARGS.hvdrun, "-np", str(np), ARGS.prog] + prog_args
    else:
        env.setdefault("HVD_CONTROLLER", "mpi")
        env.setdefault("HVD_CPU_OPERATIONS", "mpi")
        cmd = [ARGS.mpirun] + shlex.split(ARGS.mpirun_flags) + ["-np", str(np), ARGS.prog] + prog_args
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, universal_newlines=True)
    except subprocess.TimeoutExpired:
        fail("job timed out after %d s: %s" % (timeout, " ".join(cmd)))
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p


def path(name):
    p = os.path.join(ARGS.workdir, name)
    if os.path.exists(p):
        os.remove(p)
    return p


def load(file):
    with open(file) as f:
        events = json.load(f)  # the whole point: the file is always valid JSON
    check(isinstance(events, list), "%s: top level is not an array" % file)
    for e in events:
        check("name" in e and "ph" in e and "pid" in e, "malformed event %r" % e)
    return events


def tensors(events):
    """name -> pid from the process_name metadata (one per tensor, unique pids)."""
    out = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            name = e["args"]["name"]
            check(name not in out, "two process_name events for %s" % name)
            out[name] = e["pid"]
    check(len(set(out.values())) == len(out), "pids are not unique: %r" % out)
    return out


def tree(events, pid):
    """The duration events of one pid as nested nodes, in file order.

    Asserts that B/E pairs nest, that E names match their B, that time never
    goes back on the track and that nothing is left open."""
    roots, stack, last = [], [], -1
    for e in events:
        if e["pid"] != pid or e["ph"] == "M":
            continue
        check(e["ts"] >= last, "pid %d: time goes back at %r" % (pid, e))
        last = e["ts"]
        if e["ph"] == "B":
            node = {"name": e["name"], "b": e["ts"], "children": [], "ticks": []}
            (stack[-1]["children"] if stack else roots).append(node)
            stack.append(node)
        elif e["ph"] == "E":
            check(stack, "pid %d: E without B: %r" % (pid, e))
            node = stack.pop()
            check(node["name"] == e["name"], "pid %d: E %s closes B %s" % (pid, e["name"], node["name"]))
            node["e"] = e["ts"]
            node["args"] = e.get("args", {})
        elif e["ph"] == "i":
            check(stack, "pid %d: tick outside a span: %r" % (pid, e))
            stack[-1]["ticks"].append(e)
    check(not stack, "pid %d: left open: %r" % (pid, [n["name"] for n in stack]))
    return roots


def expect_op(node, op, children, dtype, shape):
    check(node["name"] == op, "expected %s, got %s" % (op, node["name"]))
    got = [c["name"] for c in node["children"]]
    check(got == children, "%s children: expected %r, got %r" % (op, children, got))
    check(node["args"].get("dtype") == dtype, "%s dtype: %r" % (op, node["args"]))
    check(node["args"].get("shape") == shape, "%s shape: %r" % (op, node["args"]))


def expect_negotiation(node, op, ranks):
    check(node["name"] == "NEGOTIATE_" + op, "expected NEGOTIATE_%s, got %s" % (op, node["name"]))
    got = sorted(t["args"]["rank"] for t in node["ticks"])
    check(got == ranks, "NEGOTIATE_%s ticks: expected ranks %r, got %r" % (op, ranks, got))
    check([t["name"] for t in node["ticks"]] == [str(t["args"]["rank"]) for t in node["ticks"]],
          "tick names are not the ranks")


def check_basic(file, backend, fused=True):
    events = load(file)
    pids = tensors(events)
    names = ["fused.a", "fused.b", "fused.c", "single", "gather", "bcast"]
    for n in names:
        check(n in pids, "no process_name for %s (have %r)" % (n, sorted(pids)))
    check(not any(e["name"] == "CYCLE_START" for e in events), "CYCLE_START without mark_cycles")
    ar = backend + "_ALLREDUCE"
    shapes = {"fused.a": [4], "fused.b": [2, 3], "fused.c": [5]}
    windows = []
    for n, shape in shapes.items():
        roots = tree(events, pids[n])
        check(len(roots) == 2, "%s: expected negotiation + op, got %r" % (n, [r["name"] for r in roots]))
        expect_negotiation(roots[0], "ALLREDUCE", [0, 1])
        # Fused: packed into the fusion buffer, or (shared memory, one host)
        # reduced straight from the tensors in one call.
        packed = ["QUEUE", "MEMCPY_IN_FUSION_BUFFER", ar, "MEMCPY_OUT_FUSION_BUFFER"]
        got = [c["name"] for c in roots[1]["children"]]
        inner = packed if fused and got == packed else ["QUEUE", ar]
        expect_op(roots[1], "ALLREDUCE", inner, "float32", shape)
        call = [c for c in roots[1]["children"] if c["name"] == ar][0]
        windows.append((call["b"], call["e"]))
    one_call = max(b for b, _ in windows) <= min(e for _, e in windows)
    check(one_call == fused, "fused.*: %s expected, backend calls %r" %
          ("one call" if fused else "separate calls", windows))
    roots = tree(events, pids["single"])
    # The first one is negotiated; the next two are response-cache hits.
    check([r["name"] for r in roots] == ["NEGOTIATE_ALLREDUCE"] + ["ALLREDUCE"] * 3,
          "single: %r" % [r["name"] for r in roots])
    expect_negotiation(roots[0], "ALLREDUCE", [0, 1])
    for r in roots[1:]:
        expect_op(r, "ALLREDUCE", ["QUEUE", ar], "float32", [8])
    roots = tree(events, pids["gather"])
    check(len(roots) == 2, "gather: %r" % [r["name"] for r in roots])
    expect_negotiation(roots[0], "ALLGATHER", [0, 1])
    check(roots[1]["name"] == "ALLGATHER" and backend + "_ALLGATHER" in [c["name"] for c in roots[1]["children"]],
          "gather: no %s_ALLGATHER in %r" % (backend, roots[1]))
    check(roots[1]["args"] == {"dtype": "float32", "shape": [1, 2]}, "gather args %r" % roots[1]["args"])
    roots = tree(events, pids["bcast"])
    check(len(roots) == 2, "bcast: %r" % [r["name"] for r in roots])
    expect_negotiation(roots[0], "BROADCAST", [0, 1])
    expect_op(roots[1], "BROADCAST", ["QUEUE", backend + "_BROADCAST"], "int32", [3])
    # The queue starts no earlier than the negotiation ended.
    for n in pids:
        for r in tree(events, pids[n]):
            check(r["e"] >= r["b"], "%s: negative duration" % n)
    return events


def run_grouped(extra=None, gloo=False, fused=True):
    """Grouped allgather/reducescatter: the float32 members of each group
    go through the fusion buffer together (one backend collective); the
    int32 member of the reducescatter group runs alone."""
    file = path("grouped.json")
    env = {"HVD_TIMELINE": file}
    env.update(extra or {})
    p = launch(2, ["grouped"], env, gloo=gloo)
    check(p.returncode == 0, "job failed (%d)" % p.returncode)
    backend = "GLOO" if gloo else "MPI"
    events = load(file)
    pids = tensors(events)
    for names, op in ((["ggather.a", "ggather.b"], "ALLGATHER"),
                      (["gscatter.a", "gscatter.b"], "REDUCESCATTER"), (["gscatter.i"], None)):
        op = op or "REDUCESCATTER"
        alone = len(names) == 1 or not fused
        windows = []
        for n in names:
            check(n in pids, "no process_name for %s (have %r)" % (n, sorted(pids)))
            roots = tree(events, pids[n])
            check([r["name"] for r in roots] == ["NEGOTIATE_" + op, op],
                  "%s: %r" % (n, [r["name"] for r in roots]))
            expect_negotiation(roots[0], op, [0, 1])
            got = [c["name"] for c in roots[1]["children"]]
            backend_op = [c for c in roots[1]["children"] if c["name"] == backend + "_" + op]
            check(len(backend_op) == 1, "%s: no single %s_%s in %r" % (n, backend, op, got))
            check(("MEMCPY_IN_FUSION_BUFFER" in got) != alone,
                  "%s: %s expected, children %r" % (n, "unfused" if alone else "fused", got))
            windows.append((backend_op[0]["b"], backend_op[0]["e"]))
        if not alone:  # one collective: the members' backend spans overlap
            check(max(b for b, _ in windows) <= min(e for _, e in windows),
                  "%s: separate collectives %r" % (names, windows))


def run_basic(extra=None, gloo=False, fused=True):
    file = ARGS.output or path("basic.json")
    env = {"HVD_TIMELINE": file}
    env.update(extra or {})
    p = launch(2, ["basic"], env, gloo=gloo)
    check(p.returncode == 0, "job failed (%d)" % p.returncode)
    check_basic(file, "GLOO" if gloo else "MPI", fused)
    if not gloo:
        check("MPI_ALLREDUCE" in open(file).read(), "no MPI_ALLREDUCE")
    else:
        check("MPI_" not in open(file).read(), "MPI activity under Gloo")


def run_runtime():
    f1, f2 = path("runtime1.json"), path("runtime2.json")
    p = launch(2, ["runtime", f2], {"HVD_TIMELINE": f1})
    check(p.returncode == 0, "job failed (%d)" % p.returncode)
    e1, e2 = load(f1), load(f2)
    t1, t2 = tensors(e1), tensors(e2)
    check("phase1" in t1 and "phase2" not in t1 and "phase3" not in t1, "file 1 has %r" % sorted(t1))
    check("phase2" in t2 and "phase1" not in t2 and "phase3" not in t2, "file 2 has %r" % sorted(t2))
    roots = tree(e2, t2["phase2"])
    check([r["name"] for r in roots] == ["NEGOTIATE_ALLREDUCE", "ALLREDUCE", "ALLREDUCE"],
          "phase2: %r" % [r["name"] for r in roots])
    expect_op(roots[1], "ALLREDUCE", ["QUEUE", "MPI_ALLREDUCE"], "float32", [4])
    # mark_cycles=1 in hvd_start_timeline, off (default) for HVD_TIMELINE.
    cycles = [e for e in e2 if e["name"] == "CYCLE_START"]
    check(len(cycles) >= 2 and all(e["ph"] == "i" and e["s"] == "g" for e in cycles), "CYCLE_START: %r" % cycles[:3])
    check(not any(e["name"] == "CYCLE_START" for e in e1), "CYCLE_START in file 1")
    check(all(e["pid"] != 0 for e in e1 + e2 if e["ph"] == "M"), "pid 0 is the cycle markers' own")


def run_kill():
    for attempt in range(3):
        file = path("kill%d.json" % attempt)
        p = launch(2, ["kill"], {"HVD_TIMELINE": file}, timeout=90)
        check(p.returncode != 0, "the job was expected to die")
        events = load(file)
        ops = [e for e in events if e["name"] == "ALLREDUCE" and e["ph"] == "E"]
        check(len(ops) > 0, "attempt %d: no completed ALLREDUCE before the kill" % attempt)
        print("attempt %d: %d events, %d allreduces, parsed" % (attempt, len(events), len(ops)))


STALL_RE = r"\[rank 0\] WARNING: Stall detected in process set 0: .*'%s' \(allreduce, waiting \d+ s for ranks 1\)"


def run_stall(how):
    name = "stall.cached" if how.startswith("cached") else "stall.fresh"
    env = {"HVD_STALL_CHECK_TIME_SECONDS": "1", "HVD_LOG_HIDE_TIME": "1"}
    timeout = how.endswith("timeout")
    if timeout:
        env["HVD_STALL_SHUTDOWN_TIME_SECONDS"] = "3"
    p = launch(2, ["stall", how], env, timeout=90)
    check(p.returncode == 0, "job failed (%d)" % p.returncode)
    check(re.search(STALL_RE % re.escape(name), p.stderr),
          "no stall warning naming %s and rank 1 on rank 0's stderr" % name)
    m = re.search(r"STALL_RESULT status=(-?\d+) seconds=([\d.]+) error=(.*)", p.stdout)
    check(m, "rank 0 printed no STALL_RESULT")
    status, seconds, error = int(m.group(1)), float(m.group(2)), m.group(3)
    if timeout:
        check(status == -7, "expected HVD_ERR_TIMEOUT (-7), got %d" % status)
        check(2.5 <= seconds <= 7.0, "the stall error came after %.2f s (expected 3-7)" % seconds)
        check("stalled" in error and name in error and "HVD_STALL_SHUTDOWN_TIME_SECONDS" in error,
              "error text: %r" % error)
    else:
        check(status == 0, "the late rank should have completed %s, got %d" % (name, status))
        check(seconds >= 3.5, "completed before rank 1 submitted (%.2f s)" % seconds)


def run_log():
    bad = "/nonexistent-dir/x/timeline.json"
    stamp = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} rank 0\]"
    p = launch(1, ["log"], {"HVD_TIMELINE": bad})
    check(p.returncode == 0, "job failed")
    check(re.search(r"(?m)^" + stamp + r" WARNING: HVD_TIMELINE: cannot open timeline file", p.stderr),
          "default: no time-stamped warning line")
    check("DEBUG:" not in p.stderr, "default level printed DEBUG lines")
    p = launch(1, ["log"], {"HVD_TIMELINE": bad, "HVD_LOG_HIDE_TIME": "1"})
    check(re.search(r"(?m)^\[rank 0\] WARNING: HVD_TIMELINE: cannot open timeline file", p.stderr),
          "hide time: no '[rank 0] WARNING:' line")
    check(not re.search(stamp, p.stderr), "hide time: a time stamp was printed")
    check("DEBUG:" not in p.stderr, "hide time: DEBUG lines at warning level")
    p = launch(1, ["log"], {"HVD_LOG_LEVEL": "debug", "HVD_LOG_HIDE_TIME": "1"})
    check(re.search(r"(?m)^\[rank 0\] DEBUG: initialized: rank 0/1", p.stderr), "debug: no DEBUG line")
    p = launch(1, ["log"], {"HVD_TIMELINE": bad, "HVD_LOG_LEVEL": "error"})
    check("WARNING:" not in p.stderr, "error level printed a warning")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("check")
    ap.add_argument("--prog", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-flags", default="--allow-run-as-root --oversubscribe")
    ap.add_argument("--hvdrun")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--output", help="basic: where to leave the timeline for later checks")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.workdir, exist_ok=True)
    c = ARGS.check
    if c == "basic":
        run_basic()
    elif c == "basic-unfused":
        run_basic({"HVD_FUSION_THRESHOLD": "0"}, fused=False)
    elif c == "gloo":
        run_basic(gloo=True)
    elif c == "grouped":
        run_grouped()
    elif c == "grouped-unfused":
        run_grouped({"HVD_FUSION_THRESHOLD": "0"}, fused=False)
    elif c == "grouped-gloo":
        run_grouped(gloo=True)
    elif c == "runtime":
        run_runtime()
    elif c == "kill":
        run_kill()
    elif c.startswith("stall-"):
        run_stall(c[len("stall-"):])
    elif c == "log":
        run_log()
    else:
        fail("unknown check " + c)
    print("PASS: " + c)


if __name__ == "__main__":
    main()
