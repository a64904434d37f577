#!/usr/bin/python3
"""Fails when a file includes a header of a layer above its own.

The layers and who may include whom are docs/architecture.md's picture; the
table below is the same rule in code. A file belongs to the layer of the
first folder of its path that the table names (core/<layer>/..., capi/,
tools/<program>/); an include "core/<layer>/..." or "capi/..." is checked
against it. Includes of system and third-party headers are not checked. A
folder of core/ that the table does not name fails the check (its files
would otherwise go unchecked), and so does a folder of core/backends/ that
is not a transport in TRANSPORTS (decorators belong in
core/dataplane/decorators/, algorithms in core/algorithms/). The C layer is held to more: it may include
only core/api/api.h and the common headers in CAPI_CORE_HEADERS, and each
capi/*.cc stays at CAPI_MAX_LINES lines or fewer.

  check_layers.py [--root DIR]    check the tree (default: this repository)
  check_layers.py --self-test     check that a wrong include is caught
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

# The core, top to bottom: a layer may include itself and the layers below.
CORE_ORDER = [
    "api",
    "runtime",
    "gpu",
    "ops",
    "tensor",
    "coordination",
    "observability",
    "dataplane",
    "algorithms",
    "backends",
    "cuda",
    "rendezvous",
    "common",
]


def below(layer):
    """core/<layer> and every core layer under it, as include prefixes."""
    return ["core/" + name + "/" for name in CORE_ORDER[CORE_ORDER.index(layer):]]


# The folders of core/backends/: transports only.
TRANSPORTS = ["gloo", "mpi", "nccl", "tcp"]

# The only core headers capi/ may include (exact paths).
CAPI_CORE_HEADERS = ["core/api/api.h", "core/common/status.h", "core/common/types.h"]
# The C layer stays thin: no capi/*.cc longer than this.
CAPI_MAX_LINES = 300

# Who may include what, by the folder a file is in (longest match wins).
RULES = {"core/" + name + "/": below(name) for name in CORE_ORDER}
RULES.update({
    # The C layer is a translation of the C++ API: core/api/api.h and the two
    # common headers of the types it takes (status codes, dtypes, devices).
    "capi/": ["capi/", "hvd/"] + CAPI_CORE_HEADERS,
    # The launcher does not link the core: only its bottom two layers, and
    # the data plane's pure plan for --explain (hvd_dataplane_plan).
    "tools/hvdrun/": ["tools/hvdrun/", "core/rendezvous/", "core/common/",
                      "core/dataplane/plan.h"],
    "tools/hvd_bench/": ["tools/hvd_bench/", "hvd/", "core/rendezvous/", "core/common/"],
})
# Project include prefixes that are checked at all (others are third-party).
PROJECT_PREFIXES = ("core/", "capi/", "tools/", "hvd/")
SOURCE_ENDINGS = (".h", ".cc", ".cu", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rule_for(path):
    best = None
    for folder in RULES:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def unknown_layers(root):
    """Yields a message for each folder of core/ the table does not name:
    its files would otherwise go unchecked."""
    core = os.path.join(root, "core")
    for name in sorted(os.listdir(core)):
        if os.path.isdir(os.path.join(core, name)) and name not in CORE_ORDER:
            yield "core/%s/: a folder the layer table does not know (add it to CORE_ORDER)" % name
    backends = os.path.join(core, "backends")
    for name in sorted(os.listdir(backends)):
        if os.path.isdir(os.path.join(backends, name)) and name not in TRANSPORTS:
            yield ("core/backends/%s/: backends/ holds transports only (TRANSPORTS); decorators "
                   "go to core/dataplane/decorators/, algorithms to core/algorithms/" % name)


def violations(root):
    """Yields 'file:line: message' for every include against the rules."""
    yield from unknown_layers(root)
    for top in ("core", "capi", "tools"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_ENDINGS):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                rule = rule_for(path)
                if rule is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or not m.group(1).startswith(PROJECT_PREFIXES):
                            continue
                        header = m.group(1)
                        if header.startswith(tuple(RULES[rule])):
                            continue
                        if "/" not in header[len("core/"):] and header.startswith("core/"):
                            continue  # not a layer path; the compiler will say so
                        yield "%s:%d: %s may not include \"%s\" (allowed: %s)" % (
                            path, number, rule.rstrip("/"), header, ", ".join(RULES[rule]))


def capi_too_long(root):
    """Yields a message for every capi/*.cc over CAPI_MAX_LINES lines."""
    folder = os.path.join(root, "capi")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".cc"):
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                lines = sum(1 for _ in f)
            if lines > CAPI_MAX_LINES:
                yield "capi/%s: %d lines; the C layer's files stay at %d or fewer " \
                      "(move logic into core/api)" % (name, lines, CAPI_MAX_LINES)


def check(root):
    found = list(violations(root)) + list(capi_too_long(root))
    for v in found:
        print(v)
    if found:
        print("%d include(s) against the layering (docs/architecture.md)" % len(found))
        return 1
    print("layering ok: no file includes a higher layer")
    return 0


def capi_self_test(tmp):
    """A runtime header in capi/ and an overlong capi/*.cc must both fail."""
    victim = os.path.join(tmp, "capi", "capi_status.cc")
    with open(victim, encoding="utf-8") as f:
        original = f.read()
    with open(victim, "a", encoding="utf-8") as f:
        f.write('#include "core/runtime/runtime.h"\n' + "//\n" * CAPI_MAX_LINES)
    found = list(violations(tmp)) + list(capi_too_long(tmp))
    with open(victim, "w", encoding="utf-8") as f:
        f.write(original)
    if (len(found) == 2 and found[0].startswith("capi/capi_status.cc:") and
            "lines" in found[1]):
        print("self-test ok: " + "; ".join(found))
        return True
    print("self-test FAILED: a long capi file including runtime/ gave %r" % found)
    return False


def self_test(root):
    """A copy of the tree with one wrong include must fail, naming the file."""
    with tempfile.TemporaryDirectory() as tmp:
        for top in ("core", "capi", "tools"):
            shutil.copytree(os.path.join(root, top), os.path.join(tmp, top))
        if list(violations(tmp)) or list(capi_too_long(tmp)):
            print("self-test: the tree itself already fails; fix that first")
            return 1
        if not capi_self_test(tmp):
            return 1
        victim = os.path.join(tmp, "core", "common", "status.h")
        with open(victim, "a", encoding="utf-8") as f:
            f.write('#include "core/runtime/runtime.h"\n')
        found = list(violations(tmp))
        if len(found) != 1 or not found[0].startswith("core/common/status.h:"):
            print("self-test FAILED: a common/ header including runtime/ gave %r" % found)
            return 1
        print("self-test ok: " + found[0])
        os.makedirs(os.path.join(tmp, "core", "newlayer"))
        found = [v for v in violations(tmp) if v.startswith("core/newlayer/")]
        if len(found) != 1:
            print("self-test FAILED: an unknown core/ folder gave %r" % found)
            return 1
        print("self-test ok: " + found[0])
        os.makedirs(os.path.join(tmp, "core", "backends", "staging"))
        found = [v for v in violations(tmp) if v.startswith("core/backends/staging/")]
        if len(found) != 1:
            print("self-test FAILED: a non-transport folder in backends/ gave %r" % found)
            return 1
        print("self-test ok: " + found[0])
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    return self_test(args.root) if args.self_test else check(args.root)


if __name__ == "__main__":
    sys.exit(main())
