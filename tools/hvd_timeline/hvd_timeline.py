#!/usr/bin/python3
"""hvd_timeline: summarise an hvd (or Horovod) Chrome-trace timeline.

    hvd_timeline FILE [--json]

Reports, from the file rank 0 wrote (HVD_TIMELINE / hvd_start_timeline):
  * per operation type (ALLREDUCE, ...): count, total and mean time, bytes
    (dtype size x shape from each operation's end event, rank 0's tensor);
  * per activity (QUEUE, MEMCPY_IN_FUSION_BUFFER, MPI_ALLREDUCE, ...): count,
    total and mean time;
  * fused groups: tensors whose backend calls (MPI_ALLREDUCE, ...) overlap
    went through one collective;
  * negotiation wait per tensor: NEGOTIATE_* begin to end, and which rank was
    the last to become ready (the straggler) how often.
Times are microseconds. A file cut short (a job killed mid-write by an older
writer) is repaired by dropping the torn tail. Needs only the Python 3
standard library.
"""
import argparse
import collections
import json
import sys

DTYPE_BYTES = {"uint8": 1, "int8": 1, "bool": 1, "int16": 2, "uint16": 2, "float16": 2,
               "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8,
               "float64": 8}
OPS = {"ALLREDUCE", "ALLGATHER", "BROADCAST", "ALLTOALL", "REDUCESCATTER", "BARRIER", "JOIN",
       "ADD_PROCESS_SET", "REMOVE_PROCESS_SET"}


def load(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        if not text.lstrip().startswith("["):
            raise
    # Keep every whole event up to the torn one: hvd writes one per line.
    events = []
    for line in text.splitlines()[1:]:
        line = line.strip().rstrip(",")
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events


def spans(events):
    """Completed duration events per pid: (pid, name, begin, end, end_args, ticks)."""
    stacks = collections.defaultdict(list)
    out = []
    for e in events:
        ph, pid = e.get("ph"), e.get("pid", 0)
        if ph == "B":
            stacks[pid].append([e["name"], e["ts"], []])
        elif ph == "E" and stacks[pid]:
            name, begin, ticks = stacks[pid].pop()
            out.append((pid, name, begin, e["ts"], e.get("args", {}), ticks))
        elif ph == "i" and stacks[pid]:
            stacks[pid][-1][2].append(e)
    return out  # spans still open (a killed job) are left out


def nbytes(args):
    size = DTYPE_BYTES.get(args.get("dtype"))
    if size is None or "shape" not in args:
        return 0
    n = 1
    for d in args["shape"]:
        n *= d
    return n * size


def summarise(events):
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    all_spans = spans(events)
    ops = collections.OrderedDict()
    acts = collections.OrderedDict()
    nego = collections.OrderedDict()
    backend_calls = []  # (begin, end, tensor)
    for pid, name, begin, end, args, ticks in sorted(all_spans, key=lambda s: (s[2], -s[3])):
        tensor = names.get(pid, "pid %d" % pid)
        dur = end - begin
        if name in OPS:
            o = ops.setdefault(name, {"count": 0, "total_us": 0, "bytes": 0})
            o["count"] += 1
            o["total_us"] += dur
            o["bytes"] += nbytes(args)
        elif name.startswith("NEGOTIATE_"):
            n = nego.setdefault(tensor, {"count": 0, "total_us": 0, "last_rank": {}})
            n["count"] += 1
            n["total_us"] += dur
            if ticks:
                last = str(ticks[-1].get("args", {}).get("rank", ticks[-1]["name"]))
                n["last_rank"][last] = n["last_rank"].get(last, 0) + 1
        else:
            a = acts.setdefault(name, {"count": 0, "total_us": 0})
            a["count"] += 1
            a["total_us"] += dur
            if name != "QUEUE" and not name.startswith("MEMCPY_"):
                backend_calls.append((begin, end, tensor))
    for table in (ops, acts, nego):
        for v in table.values():
            v["mean_us"] = round(v["total_us"] / v["count"], 3) if v["count"] else 0

    # Overlapping backend calls = one fused collective (executions of fused
    # responses never overlap each other: one background thread runs them;
    # shared memory reduces a group straight from its tensors, with no
    # fusion-buffer copies to see).
    groups, cur, cur_end = [], [], None
    for begin, end, tensor in sorted(backend_calls):
        if cur and begin <= cur_end:
            cur.append(tensor)
            cur_end = max(cur_end, end)
        else:
            if cur:
                groups.append(cur)
            cur, cur_end = [tensor], end
    if cur:
        groups.append(cur)
    groups = [g for g in groups if len(g) > 1]
    sizes = collections.Counter(len(g) for g in groups)
    return {
        "events": len(events),
        "tensors": len(names),
        "cycles": sum(1 for e in events if e.get("name") == "CYCLE_START"),
        "ops": ops,
        "activities": acts,
        "fusion": {"groups": len(groups),
                   "sizes": {str(k): sizes[k] for k in sorted(sizes)},
                   "mean_size": round(sum(map(len, groups)) / len(groups), 3) if groups else 0,
                   "members": [sorted(g) for g in groups]},
        "negotiation": nego,
    }


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def print_text(s, path):
    print("%s: %d events, %d tensors, %d cycle markers" % (path, s["events"], s["tensors"], s["cycles"]))
    print("\n%-20s %8s %14s %12s %12s" % ("operation", "count", "total us", "mean us", "bytes"))
    for k, v in s["ops"].items():
        print("%-20s %8d %14d %12.1f %12s" % (k, v["count"], v["total_us"], v["mean_us"], human(v["bytes"])))
    print("\n%-26s %8s %14s %12s" % ("activity", "count", "total us", "mean us"))
    for k, v in s["activities"].items():
        print("%-26s %8d %14d %12.1f" % (k, v["count"], v["total_us"], v["mean_us"]))
    f = s["fusion"]
    sizes = ", ".join("%s tensors x%d" % (k, v) for k, v in f["sizes"].items()) or "none"
    print("\nfused groups: %d (mean %.1f tensors): %s" % (f["groups"], f["mean_size"], sizes))
    print("\n%-32s %8s %14s %12s  %s" % ("negotiation wait", "count", "total us", "mean us", "last ready rank"))
    for k, v in sorted(s["negotiation"].items(), key=lambda kv: -kv[1]["total_us"]):
        last = ", ".join("%s x%d" % kv for kv in sorted(v["last_rank"].items())) or "-"
        print("%-32s %8d %14d %12.1f  %s" % (k, v["count"], v["total_us"], v["mean_us"], last))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="hvd_timeline", description="Summarise an hvd timeline file.")
    ap.add_argument("file")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    a = ap.parse_args(argv)
    try:
        events = load(a.file)
    except (OSError, ValueError) as err:
        print("hvd_timeline: cannot read %s: %s" % (a.file, err), file=sys.stderr)
        return 1
    s = summarise(events)
    if a.json:
        json.dump(s, sys.stdout, indent=2)
        print()
    else:
        print_text(s, a.file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
