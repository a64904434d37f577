#!/usr/bin/python3
"""suite_table: the table of run_horovod_suite.sh's results.tsv (lines: test id,
launcher, np, P/F/S, reason), test x launcher/np, with totals per column.

    suite_table.py RESULTS.tsv             plain text
    suite_table.py --markdown RESULTS.tsv  a Markdown table, then the totals,
                                           the failures and the skip reasons
"""
import collections
import sys


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if len(paths) != 1:
        sys.exit(__doc__)
    rows = [l.rstrip("\n").split("\t") for l in open(paths[0]) if l.strip()]
    cols = sorted({(r[1], int(r[2])) for r in rows})
    cell = {(r[0], r[1], int(r[2])): r[3] for r in rows}
    reason = {(r[0], r[1], int(r[2])): r[4] for r in rows if len(r) > 4 and r[4]}
    tests = sorted({r[0] for r in rows}, key=lambda t: (t.split("::")[0], t.split("::")[-1]))
    name = {t: t.split("::")[-1] for t in tests}
    heads = ["%s/%d" % c for c in cols]
    if markdown:
        print("| test | " + " | ".join(heads) + " |")
        print("|---|" + "---|" * len(cols))
        for t in tests:
            print("| `%s` | %s |" % (name[t], " | ".join(cell.get((t,) + c, "-") for c in cols)))
    else:
        width = max(len(n) for n in name.values())
        print("%-*s %s" % (width, "test", " ".join(heads)))
        for t in tests:
            print("%-*s %s" % (width, name[t], " ".join(
                cell.get((t,) + c, "-").center(len(h)) for c, h in zip(cols, heads))))
    print()
    for c in cols:
        n = collections.Counter(cell[k] for k in cell if k[1:] == c)
        print("%s%s np=%d: %d pass, %d fail, %d skip" % (
            "- " if markdown else "", c[0], c[1], n["P"], n["F"], n["S"]))
    fails = sorted(k for k, v in cell.items() if v == "F")
    if fails:
        print("\nFailures:" if not markdown else "\nFailures:\n")
        for t, l, n in fails:
            print("- %s (%s, np %d)%s" % (name[t], l, n,
                                           ": " + reason[(t, l, n)] if (t, l, n) in reason else ""))
    skips = collections.defaultdict(list)
    for k, v in cell.items():
        if v == "S":
            skips[reason.get(k, "(no reason logged)")].append(k)
    if skips:
        print("\nSkip reasons:" if not markdown else "\nSkip reasons:\n")
        for why, ks in sorted(skips.items(), key=lambda kv: -len(kv[1])):
            print("- %s: %d (%s)" % (why, len(ks), ", ".join(
                sorted({name[k[0]] for k in ks}))))


if __name__ == "__main__":
    main(sys.argv[1:])
