#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for capi/include/hvd/hvd.h: reads the header's plain
C comments as documentation, so the header keeps one comment style.

- The file's first comment becomes its @file description.
- A comment directly above a declaration documents it; when several
  declarations follow it with no blank line between, it documents each of
  them (the filter repeats it on each one's line).
- A comment after code on the same line documents that member (/**<).
- Section dividers (/* ---- name */) and comments followed by a blank line
  stay plain comments.
Line numbers are kept, so Doxygen's warnings point at the header.
"""
import re
import sys

TRAILING = re.compile(r"^(\s*\S.*?)/\*(?![*@])(.*\*/\s*)$")


def is_code(line):
    s = line.strip()
    return bool(s) and not s.startswith("/*") and not re.match(r"#\s*(if|ifdef|ifndef|else|elif|endif)\b", s)


def statement_end(lines, k):
    while k < len(lines) and ";" not in lines[k]:
        k += 1
    return k


def main(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i, first = 0, True
    while i < len(lines):
        s = lines[i].lstrip()
        if s.startswith("/*") and not s.startswith("/**") and not s.startswith("/*@"):
            j = i
            while "*/" not in lines[j]:
                j += 1
            text = "\n".join(lines[i:j + 1])
            indent = lines[i][: len(lines[i]) - len(s)]
            if first:
                lines[i] = indent + "/** @file" + s[2:]
            elif "----" in text:
                pass
            elif j + 1 < len(lines) and is_code(lines[j + 1]):
                lines[i] = indent + "/**" + s[2:]
                # a group: several HVD_API declarations in a row under it
                k, starts = j + 1, []
                while k < len(lines) and lines[k].startswith("HVD_API"):
                    starts.append(k)
                    k = statement_end(lines, k) + 1
                # one line, so that line numbers stay the header's
                flat = " ".join(re.sub(r"^\s*(/\*+|\*(?!/))|\*/\s*$", "", l).strip()
                                for l in lines[i:j + 1])
                for k in starts[1:]:
                    lines[k] = "/** " + flat + " */ " + lines[k]
            first = False
            i = j + 1
            continue
        m = TRAILING.match(lines[i])
        if m and is_code(re.sub(r"^\s*/\*\*.*?\*/", "", m.group(1))):
            lines[i] = m.group(1) + "/**<" + m.group(2)
        i += 1
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
