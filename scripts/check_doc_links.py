#!/usr/bin/env python3
"""Checks the internal links of the documentation: every relative link in
docs/*.md (and docs/*/*.md) and README.md must name a file that exists and,
with #anchor, a heading of that file (GitHub's and MyST's slug rule);
pages under docs/ must link only inside docs/ (the site holds docs/ only:
name other files as `code` paths). Also checks every docs page is under
600 lines. With --html DIR it checks the built site instead: every
relative href and src of every page names a file of the site and, with
#anchor, an id of that page. Exit status 1 with one line per problem.

Usage: check_doc_links.py [REPO_ROOT]
       check_doc_links.py --html SITE_DIR
"""
import html
import os
import re
import sys
from urllib.parse import unquote

MAX_LINES = 600
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(text):
    """GitHub's anchor for a heading (MyST's myst_heading_anchors uses the same)."""
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def strip_code(lines):
    """The lines outside fenced code blocks, with inline code removed."""
    out, fenced = [], False
    for n, line in enumerate(lines, 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, re.sub(r"`[^`]*`", "", line)))
    return out


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            for _, line in strip_code(f.read().split("\n")):
                m = HEADING.match(line)
                if m:
                    s = slug(m.group(2))
                    k = seen.get(s, 0)
                    seen[s] = k + 1
                    result.add(s if k == 0 else "%s-%d" % (s, k))
        cache[path] = result
    return cache[path]


def check_file(root, path, problems):
    rel = os.path.relpath(path, root)
    in_docs = rel.startswith("docs" + os.sep)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if in_docs and len(lines) > MAX_LINES:
        problems.append("%s: %d lines (at most %d)" % (rel, len(lines), MAX_LINES))
    for n, line in strip_code(lines):
        for m in list(LINK.finditer(line)) + list(IMAGE.finditer(line)):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            where = "%s:%d: link '%s'" % (rel, n, target)
            if not os.path.exists(dest):
                problems.append(where + ": no such file")
                continue
            if in_docs and not os.path.relpath(dest, root).startswith("docs" + os.sep):
                problems.append(where + ": leaves docs/ (the site holds docs/ only)")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(where + ": no heading '#%s' in %s"
                                % (anchor, os.path.relpath(dest, root)))


HREF = re.compile(r"""<(?:a|link|img|script)\b[^>]*?\b(?:href|src)=["']([^"']*)["']""", re.I)
ID = re.compile(r"""\bid=["']([^"']+)["']""")


def check_html(site):
    problems, ids, pages = [], {}, []
    for dirpath, _, names in os.walk(site):
        pages += [os.path.join(dirpath, n) for n in names if n.endswith(".html")]

    def ids_of(path):
        if path not in ids:
            with open(path, encoding="utf-8", errors="replace") as f:
                ids[path] = {html.unescape(i) for i in ID.findall(f.read())}
        return ids[path]

    for page in sorted(pages):
        with open(page, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for target in HREF.findall(text):
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                continue
            file_part, _, anchor = html.unescape(target).partition("#")
            file_part, anchor = unquote(file_part.split("?")[0]), unquote(anchor)
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) \
                if file_part else page
            where = "%s: link '%s'" % (os.path.relpath(page, site), target)
            if os.path.isdir(dest):
                dest = os.path.join(dest, "index.html")
            if not os.path.exists(dest):
                problems.append(where + ": no such file")
            elif anchor and dest.endswith(".html") and anchor not in ids_of(dest):
                problems.append(where + ": no id '%s'" % anchor)
    for p in problems:
        print(p)
    print("check_doc_links: %d pages, %d problems" % (len(pages), len(problems)))
    return 1 if problems or not pages else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--html":
        return check_html(os.path.abspath(sys.argv[2]))
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = [os.path.join(root, "README.md")]
    for dirpath, _, names in os.walk(os.path.join(root, "docs")):
        if os.sep + "_" in dirpath[len(root):]:  # _build, _static ...
            continue
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".md")]
    problems = []
    for path in files:
        check_file(root, path, problems)
    for p in problems:
        print(p)
    print("check_doc_links: %d files, %d problems" % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
