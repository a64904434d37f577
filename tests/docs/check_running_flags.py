"""Every option `hvdrun --help` lists has a row in docs/running.md's flag
table (a table line whose first cell names it in backticks).

The help is parsed generically: an option line starts (at the options'
indentation) with one or more comma-separated flags, each optionally
followed by an upper-case placeholder (-np, -n, --num-proc N), and then the
description. Continuation lines are indented deeper.

    check_running_flags.py HVDRUN docs/running.md
"""
import re
import subprocess
import sys

hvdrun, doc = sys.argv[1], sys.argv[2]
help_text = subprocess.run([hvdrun, "--help"], check=True, stdout=subprocess.PIPE, text=True).stdout

option_lines = [line for line in help_text.splitlines() if re.match(r"\s+-", line)]
indent = min(len(line) - len(line.lstrip()) for line in option_lines)
flags = []
for line in option_lines:
    if len(line) - len(line.lstrip()) != indent:
        continue  # a description that happens to start with "-"
    for token in line.split():
        token = token.rstrip(",")
        if token.startswith("-"):
            flags.append(token.split("=")[0])
        elif not re.fullmatch(r"[A-Z][A-Z0-9_]*|<[^>]+>|\[[^]]+\]|\{[^}]+\}", token):
            break  # the description starts
if len(flags) < 10 or "--help" not in flags or "-np" not in flags:
    sys.exit("could not parse hvdrun --help (found %s)" % flags)

with open(doc) as f:
    first_cells = [row.split("|")[1] for row in f.read().splitlines() if row.startswith("|") and row.count("|") >= 3]
documented = set()
for cell in first_cells:
    for code in re.findall(r"`([^`]+)`", cell):
        documented.add(code.split()[0].split("=")[0])

missing = [f for f in flags if f not in documented]
for f in missing:
    print("hvdrun --help lists %s, but %s's flag table has no row for it" % (f, doc))
if missing:
    sys.exit(1)
print("all %d flags of hvdrun --help are in %s: %s" % (len(flags), doc, " ".join(flags)))
