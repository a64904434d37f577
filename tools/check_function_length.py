#!/usr/bin/python3
"""Lists the C/C++ function definitions longer than a limit.

  check_function_length.py [--max 80] [--exclude PATH ...] DIR_OR_FILE ...

A definition counts from the first line of its signature to its closing
brace. Lambdas and local classes count as part of the function they are in.
The parser counts braces after removing comments, string and character
literals and preprocessor lines, which is exact for the code style of this
repository (no braces hidden in macros). Exits 1 when a function is over the
limit, 0 otherwise.
"""
import argparse
import os
import re
import sys

SOURCE_ENDINGS = (".h", ".cc", ".cu", ".c", ".cpp")
CONTAINER = re.compile(r'(^|[\s>])(namespace|class|struct|union|enum)\b|\bextern\s*""\s*$')
# A function body opens after ")" and optional qualifiers or a trailing return type.
FUNCTION_END = re.compile(r'\)\s*(?:(?:const|noexcept|override|final|mutable|volatile|&&|&)\s*)*'
                          r'(?:->[^{};]*)?$')
# A constructor's initialiser list: ") : member" with braces still to come.
INIT_LIST = re.compile(r'\)\s*:(?!:)')


def strip(text):
    """Removes comments, literals and preprocessor lines; keeps newlines."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if c == "\n":
            at_line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            # Raw strings R"d(...)d" are not used in this repository.
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c + "\n" * text.count("\n", i, j))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """Yields (first_line, last_line, signature) of every function definition."""
    code = strip(text)
    stack = []  # per open brace: "container", "function", "block" or "init-brace"
    header_start = 0
    line = 1
    fn_start = None
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        if c not in "{};":
            continue
        inside_function = any(kind == "function" for kind in stack)
        if c == ";":
            if not inside_function:
                header_start = i + 1
            continue
        if c == "{":
            if inside_function:
                stack.append("block")
                continue
            header = code[header_start:i].strip()
            if FUNCTION_END.search(header):
                stack.append("function")
                first = header_start + len(code[header_start:i]) - len(code[header_start:i].lstrip())
                fn_start = (code.count("\n", 0, first) + 1, " ".join(header.split())[:90])
            elif "(" in header and INIT_LIST.search(header):
                stack.append("init-brace")  # member{value} inside an initialiser list
            elif CONTAINER.search(header):
                stack.append("container")
                header_start = i + 1
            else:
                stack.append("block")  # an initialiser at namespace scope
            continue
        kind = stack.pop() if stack else "container"
        if kind == "function" and not any(k == "function" for k in stack):
            yield fn_start[0], line, fn_start[1]
        if kind != "init-brace" and not any(k == "function" for k in stack):
            header_start = i + 1


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for folder, _, files in os.walk(p):
            for name in sorted(files):
                if name.endswith(SOURCE_ENDINGS):
                    yield os.path.join(folder, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("--exclude", action="append", default=[],
                        help="a file (or path suffix) not to check")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    long_ones = 0
    for path in source_files(args.paths):
        norm = path.replace(os.sep, "/")
        if any(norm.endswith(e) for e in args.exclude):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for first, last, signature in functions(text):
            length = last - first + 1
            if length > args.max:
                long_ones += 1
                print("%s:%d: %d lines: %s" % (norm, first, length, signature))
    if long_ones:
        print("%d function(s) over %d lines" % (long_ones, args.max))
        return 1
    print("no function over %d lines" % args.max)
    return 0


if __name__ == "__main__":
    sys.exit(main())
