#!/usr/bin/python3
"""hvd_flight: find where the ranks of a job diverged, from their flight records.

    hvd_flight [--size N] PATH...

PATH is a rank's dump (hvd_flight.rank<N>.json, written on a deadline, a lost
peer, SIGUSR1 or hvd_dump_flight_record) or a directory holding them
(HVD_FLIGHT_RECORDER_DIR, default /tmp). Each dump lists the rank's last
operations with their number in their process set's order ("#k": the k-th
operation this rank submitted to the set), shape, dtype and the time of each
stage (submitted, negotiated, executing, done).

Prints the first operation, in some process set's order, on which the ranks
disagree:
  * a rank never submitted it (or left no dump: stopped, hung or killed);
  * the ranks submitted different operations at that place (a different
    order), or the same name with a different kind, dtype or shape;
then what every rank was doing when it was submitted, and a line
"culprit: rank(s) ..." naming the ranks that differ from the rest.
Exit code: 0 when a divergence was found, 1 when the records agree, 2 on
bad input. Needs only the Python 3 standard library.
"""
import argparse
import collections
import glob
import json
import os
import sys

STATUS = {0: "OK", 1: "IN_PROGRESS", -1: "NOT_INITIALIZED", -2: "INVALID_ARGUMENT",
          -3: "MISMATCH", -4: "SHUT_DOWN", -5: "BACKEND", -6: "PEER_LOST", -7: "TIMEOUT",
          -8: "UNSUPPORTED", -9: "INTERNAL", -10: "ALREADY_INITIALIZED"}
STAGES = ("submitted_ms", "negotiated_ms", "executing_ms", "done_ms")


def load(paths):
    dumps = {}
    for p in paths:
        files = sorted(glob.glob(os.path.join(p, "hvd_flight.rank*.json"))) if os.path.isdir(p) \
            else [p]
        for f in files:
            with open(f) as fh:
                d = json.load(fh)
            if d.get("format") != "hvd-flight-1":
                raise ValueError(f"{f}: not an hvd flight record")
            dumps[d["rank"]] = d
    return dumps


def ranks_text(ranks):
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def describe(op):
    shape = "x".join(str(d) for d in op["shape"]) or "scalar"
    return f"'{op['name']}' ({op['kind']} {op['dtype']} [{shape}])"


def state(op):
    s = op["state"]
    if s == "done":
        return f"done ({STATUS.get(op['status'], op['status'])})"
    return {"submitted": "submitted, waiting for the others (not negotiated)",
            "negotiated": "negotiated, not yet executing",
            "executing": "executing"}[s]


def by_set(dumps):
    """{set: {rank: {set_seq: op}}}"""
    out = collections.defaultdict(dict)
    for r, d in dumps.items():
        for op in d["ops"]:
            out[op["set"]].setdefault(r, {})[op["set_seq"]] = op
    return out


def minority(groups):
    """The ranks outside the largest group (all but the lowest ranks' on a tie)."""
    ordered = sorted(groups.values(), key=lambda rs: (-len(rs), min(rs)))
    return sorted(r for rs in ordered[1:] for r in rs)


def first_divergence(dumps, size, missing):
    for set_id, per_rank in sorted(by_set(dumps).items()):
        members = sorted(set(per_rank) | (set(range(size)) if set_id == 0 else set()))
        present = [r for r in members if r in dumps]
        lo = max(min(per_rank.get(r, {0: None})) for r in present)
        hi = max(max(ops) for ops in per_rank.values())
        for k in range(lo, hi + 1):
            ops = {r: per_rank.get(r, {}).get(k) for r in present}
            have = {r for r, op in ops.items() if op}
            names = collections.defaultdict(list)
            for r in sorted(have):
                names[ops[r]["name"]].append(r)
            if len(names) > 1:
                lines = [f"{ranks_text(rs)} submitted {describe(ops[rs[0]])}"
                         for rs in names.values()]
                return dict(set=set_id, seq=k, ops=ops, kind="a different order", lines=lines,
                            culprits=minority(names))
            key = collections.defaultdict(list)
            for r in sorted(have):
                o = ops[r]
                key[(o["kind"], o["dtype"], tuple(o["shape"]))].append(r)
            if len(key) > 1:
                lines = [f"{ranks_text(rs)} submitted {describe(ops[rs[0]])}"
                         for rs in key.values()]
                return dict(set=set_id, seq=k, ops=ops, kind="a different kind, dtype or shape",
                            lines=lines, culprits=minority(key))
            lacking = sorted(set(present) - have)
            gone = [r for r in missing if r in members]
            if have and (lacking or gone) and not all(
                    ops[r]["state"] == "done" and ops[r]["status"] == 0 for r in have):
                op = ops[min(have)]
                lines = [f"{ranks_text(have)} submitted {describe(op)}"]
                if lacking:
                    lines.append(f"{ranks_text(lacking)} never submitted it")
                if gone:
                    lines.append(f"{ranks_text(gone)} left no flight record (stopped, hung or "
                                 "killed before it could write one)")
                return dict(set=set_id, seq=k, ops=ops, kind="ranks that never submitted it",
                            lines=lines, culprits=sorted(lacking + gone))
    return None


# Submission times come from a coarse clock (a kernel tick, a few ms): an
# operation that ended this soon after t is not counted as in flight at t.
TICK_MS = 10


def doing_at(dump, t):
    """What a rank was doing at wall time t (ms): its operations in flight."""
    busy = [op for op in dump["ops"]
            if op.get("submitted_ms", 0) <= t and op.get("done_ms", float("inf")) > t + TICK_MS]
    if busy:
        return "; ".join(f"{describe(op)} in set {op['set']} #{op['set_seq']}: {state(op)}"
                         for op in busy[:3]) + (f" (+{len(busy) - 3} more)" if len(busy) > 3 else "")
    done = [op for op in dump["ops"] if op.get("done_ms", float("inf")) <= t + TICK_MS]
    if done:
        last = done[-1]
        return f"idle; last completed {describe(last)} in set {last['set']} #{last['set_seq']}"
    return "idle; nothing recorded before then"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", help="dump files or directories")
    ap.add_argument("--size", type=int, help="ranks in the job (default: from the dumps)")
    a = ap.parse_args(argv)
    try:
        dumps = load(a.paths)
    except (OSError, ValueError) as e:
        print(f"hvd_flight: {e}", file=sys.stderr)
        return 2
    if not dumps:
        print("hvd_flight: no flight records (hvd_flight.rank<N>.json) found", file=sys.stderr)
        return 2
    size = a.size or max(d["size"] for d in dumps.values())
    missing = [r for r in range(size) if r not in dumps]
    print(f"hvd_flight: {size} ranks; records from {ranks_text(dumps)}" +
          (f"; none from {ranks_text(missing)}" if missing else ""))
    for r, d in sorted(dumps.items()):
        print(f"  rank {r} (host {d['host']}): {len(d['ops'])} operations, dumped on: {d['reason']}")
    div = first_divergence(dumps, size, missing)
    if not div:
        if missing:
            print(f"the records agree; {ranks_text(missing)} left none")
            print(f"culprit: {ranks_text(missing)}")
            return 0
        print("the records agree: no divergence found")
        return 1
    print(f"first divergence: process set {div['set']}, operation #{div['seq']}: {div['kind']}")
    for line in div["lines"]:
        print(f"  {line}")
    t = min(op["submitted_ms"] for op in div["ops"].values() if op)
    print("what each rank was doing then:")
    for r in range(size):
        if r not in dumps:
            print(f"  rank {r}: no flight record")
            continue
        mine = div["ops"].get(r)
        now = doing_at(dumps[r], t)
        later = f"; this operation later: {state(mine)}" if mine else ""
        print(f"  rank {r}: {now}{later}")
    print(f"culprit: {ranks_text(div['culprits'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
