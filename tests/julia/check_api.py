#!/usr/bin/python3
"""Checks the hand-written Julia API (Hvd.jl) against the generated ccall layer.

Every `LibHvd.hvd_xxx(args...)` call in Hvd.jl must name a function that
LibHvd.jl defines, or a struct it defines (a constructor call), with as many
arguments as it takes (fields, for a struct); every function in REQUIRED
must exist in Hvd.jl (so a binding that lost one fails here); and Hvd.jl's
blocks must balance, with every top-level `function` directly inside the
module (a missing `end` otherwise nests the rest of the file silently, which
only a Julia parser would notice). `--self-test` checks that corrupted
copies of Hvd.jl are rejected. Exit status 0 = all good.
"""
import argparse
import re
import sys

# The Julian API every release keeps (grouped operations included).
REQUIRED = ["init", "shutdown", "rank", "size", "allreduce!", "allgather", "broadcast!",
            "grouped_allgather", "grouped_reducescatter", "send", "recv!", "batch_isend_irecv"]

# Keywords that open a block closed by `end` (`mutable struct`, `abstract
# type` and `primitive type` count once, through `struct` and `type`).
OPENERS = {"function", "if", "for", "while", "begin", "let", "do", "try", "module",
           "baremodule", "struct", "macro", "quote", "type"}


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


def code_only(text):
    """The text with comments, strings and character literals blanked out
    (newlines kept, so line numbers stay right)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("#=", i):
            j = text.find("=#", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif text[i] == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            j = i + len(re.match(r"'(\\.|[^\\'])'", text[i:i + 4]).group(0))
        else:
            out.append(text[i])
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    return "".join(out)


def block_problems(api):
    """Unbalanced blocks, and top-level functions that are not directly in
    the module. Inside () and [] the words are indexing (A[end]) or
    comprehensions (for, if), not blocks."""
    code = code_only(api)
    problems, depth, brackets = [], 0, 0
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]
    for m in re.finditer(r"[()\[\]{}]|(?<![\w.:@])[A-Za-z_]\w*!?", code):
        tok = m.group(0)
        if tok in "([{":
            brackets += 1
            continue
        if tok in ")]}":
            brackets -= 1
            continue
        if brackets > 0:
            continue
        line = code.count("\n", 0, m.start()) + 1
        at_line_start = m.start() in line_starts
        if tok == "end":
            depth -= 1
            if depth < 0:
                problems.append("Hvd.jl:%d: `end` closes nothing" % line)
                depth = 0
        elif tok in OPENERS:
            if tok == "type" and not re.search(r"(abstract|primitive)\s+$", code[:m.start()]):
                continue
            if tok == "function" and at_line_start and depth != 1:
                problems.append("Hvd.jl:%d: top-level `function` at block depth %d, not 1 "
                                "(an `end` is missing above it)" % (line, depth))
            depth += 1
    if depth != 0:
        problems.append("Hvd.jl: %d block(s) left open at the end of the file" % depth)
    return problems


def check(api, lib, api_name="Hvd.jl"):
    """The list of problems (empty: all good) and the number of calls checked."""
    defined = {m.group(1): len([x for x in m.group(2).split(",") if x.strip()])
               for m in re.finditer(r"^function (hvd_\w+)\(([^)]*)\)", lib, re.M)}
    # Structs: the default constructor takes one argument per field.
    for m in re.finditer(r"^struct (\w+).*?\n(.*?)^end", lib, re.M | re.S):
        defined[m.group(1)] = len(re.findall(r"^\s+\w+::", m.group(2), re.M))
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
        problems.append("no LibHvd calls found in %s" % api_name)
    problems += block_problems(api)
    return problems, calls


def self_test(api, lib):
    """Each corruption of Hvd.jl must be rejected; the original accepted."""
    problems, _ = check(api, lib)
    if problems:
        print("self-test: the original Hvd.jl is rejected: %s" % problems)
        return 1
    fn_end = re.search(r"^function grouped_reducescatter\(.*?^end\n", api, re.M | re.S)
    corruptions = {
        "missing `end` of a function": api[:fn_end.end() - 4] + api[fn_end.end():],
        "extra `end`": api.replace("\nend # module", "\nend\nend # module"),
        "lost batch_isend_irecv": api.replace("function batch_isend_irecv(", "function batch_isend_irecv_old("),
        "wrong argument count": api.replace("Cint(length(cops)), C_NULL, handle)",
                                            "Cint(length(cops)), handle)"),
        "wrong struct field count": api.replace("pointer(ts, i), Cint(op.peer), Cint(op.tag))",
                                                "pointer(ts, i), Cint(op.peer))"),
        "unknown function": api.replace("LibHvd.hvd_send_async(", "LibHvd.hvd_sendd_async("),
    }
    failed = 0
    for what, bad in corruptions.items():
        if bad == api:
            print("self-test: corruption %r did not apply" % what)
            failed += 1
            continue
        found, _ = check(bad, lib)
        print("self-test: %s: %s" % (what, found[0] if found else "NOT DETECTED"))
        failed += 0 if found else 1
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", required=True, help="Hvd.jl")
    ap.add_argument("--lib", required=True, help="LibHvd.jl")
    ap.add_argument("--self-test", action="store_true", help="check the checker")
    a = ap.parse_args()
    api, lib = open(a.api).read(), open(a.lib).read()
    if a.self_test:
        return self_test(api, lib)
    problems, calls = check(api, lib, a.api)
    for p in problems:
        print(p)
    print("%d LibHvd calls checked, %d problems" % (calls, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
