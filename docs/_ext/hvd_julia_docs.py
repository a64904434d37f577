"""Sphinx extension: renders the docstrings of the Julia binding into the
page that holds the marker line `<!-- julia-docstrings -->` (api/julia.md).

A docstring is a triple-quoted string at the start of a line, right above
the definition it documents. Its first line, when indented (Julia's
convention), is the signature; otherwise the definition's line is. The
text is Markdown already, as Julia's docstrings are.
"""
import re

MARKER = "<!-- julia-docstrings -->"
DOC = re.compile(r'^"""(.*?)"""\s*\n([^\n]*)', re.S | re.M)


def definition(line):
    line = line.split("#")[0].strip()
    line = re.sub(r"^(function|struct|mutable struct|@enum|module|const)\s+", r"\1 ", line)
    return re.sub(r"\s*=\s.*$", "", line).strip()


def render(path):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    out = []
    for m in DOC.finditer(src):
        text, what = m.group(1).strip("\n"), m.group(2)
        lines = text.split("\n")
        if lines and lines[0].startswith("    "):
            signature, body = lines[0].strip(), "\n".join(lines[1:]).strip()
        else:
            signature, body = definition(what), text.strip()
        if what.startswith("module "):
            out.append(body + "\n")
            continue
        out.append("## `%s`\n\n%s\n" % (signature, body))
    return "\n".join(out)


def on_source_read(app, docname, source):
    if MARKER not in source[0]:
        return
    parts = []
    for path in app.config.hvd_julia_sources:
        app.env.note_dependency(path)
        parts.append(render(path))
    source[0] = source[0].replace(MARKER, "\n".join(parts))


def setup(app):
    app.add_config_value("hvd_julia_sources", [], "env")
    app.connect("source-read", on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
