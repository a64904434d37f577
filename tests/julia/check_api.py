#!/usr/bin/python3
"""Checks the hand-written Julia API (Hvd.jl) against the generated ccall layer.

Every `LibHvd.hvd_xxx(args...)` call in Hvd.jl must name a function that
LibHvd.jl defines, with the same number of arguments, and every function
in REQUIRED must exist in Hvd.jl (so a binding that lost one fails here).
Exit status 0 = all good.
"""
import argparse
import re
import sys

# The Julian API every release keeps (grouped operations included).
REQUIRED = ["init", "shutdown", "rank", "size", "allreduce!", "allgather", "broadcast!",
            "grouped_allgather", "grouped_reducescatter"]


def call_args(text, start):
    """Top-level comma-separated arguments of the call whose '(' is at start."""
    depth, args, cur = 0, [], ""
    for ch in text[start:]:
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                if cur.strip():
                    args.append(cur)
                return args
        if depth == 1 and ch == ",":
            args.append(cur)
            cur = ""
        else:
            cur += ch
    raise ValueError("unbalanced call at %d" % start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", required=True, help="Hvd.jl")
    ap.add_argument("--lib", required=True, help="LibHvd.jl")
    a = ap.parse_args()
    api, lib = open(a.api).read(), open(a.lib).read()
    defined = {m.group(1): len([x for x in m.group(2).split(",") if x.strip()])
               for m in re.finditer(r"^function (hvd_\w+)\(([^)]*)\)", lib, re.M)}
    problems = []
    calls = 0
    for m in re.finditer(r"LibHvd\.(hvd_\w+)\(", api):
        calls += 1
        name = m.group(1)
        n = len(call_args(api, m.end() - 1))
        if name not in defined:
            problems.append("Hvd.jl calls LibHvd.%s, which LibHvd.jl does not define" % name)
        elif defined[name] != n:
            problems.append("Hvd.jl calls LibHvd.%s with %d arguments; it takes %d"
                            % (name, n, defined[name]))
    for fn in REQUIRED:
        if not re.search(r"^(function %s\(|%s\(\) =)" % (re.escape(fn), re.escape(fn)), api, re.M):
            problems.append("Hvd.jl lacks %s" % fn)
    if calls == 0:
        problems.append("no LibHvd calls found in %s" % a.api)
    for p in problems:
        print(p)
    print("%d LibHvd calls checked, %d problems" % (calls, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
