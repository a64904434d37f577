# Sphinx configuration of hvd's documentation site. Build it with
# scripts/docs.sh (which runs Doxygen first and sets HVD_DOCS_OUT); the
# Markdown pages stay Markdown (MyST).
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.environ.get("HVD_DOCS_OUT", os.path.join(ROOT, "build", "docs"))
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "hvd"
author = "the hvd authors"
copyright = "the hvd authors"
release = version = "1.0.0"

extensions = [
    "myst_parser",
    "breathe",
    "sphinx.ext.autodoc",
    "hvd_julia_docs",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Doxyfile"]
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# The C API from hvd.h, through Doxygen's XML.
breathe_projects = {"hvd": os.path.join(OUT, "doxygen", "xml")}
breathe_default_project = "hvd"
breathe_domain_by_extension = {"h": "c"}
breathe_show_include = True

# The Python API from the built package (PYTHONPATH=<build>/python).
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
autodoc_inherit_docstrings = False  # not torch's own, under hvd's names

# The Julia API from the docstrings of bindings/julia/Hvd/src.
hvd_julia_sources = [os.path.join(ROOT, "bindings", "julia", "Hvd", "src", "Hvd.jl")]

html_theme = "sphinx_rtd_theme"
html_title = "hvd documentation"
html_show_sourcelink = False
html_theme_options = {"navigation_depth": 3}


# hvd's docstrings are plain text, not reStructuredText: code is indented
# under a line of prose, and `*` is literal (`*_async`). Read them so.
def _plain_docstring(app, what, name, obj, options, lines):
    if any(line.rstrip().endswith("::") for line in lines):
        return  # written as reStructuredText already
    out, in_code = [], False
    for line in lines:
        code = line.startswith("    ") or (in_code and not line.strip())
        if code and not in_code:
            out += ["", "::", ""]  # a literal block; "::" alone prints nothing
        elif not code and in_code and line.strip():
            out.append("")
        in_code = code
        out.append(line if code else re.sub(r"(\w)_(?=\W|$)", r"\1\\_", line.replace("*", r"\*")))
    lines[:] = out


# A package re-exports what its submodules define (hvd.torch re-exports
# hvd's errors): document each object once, where it is first met.
_documented = set()


def _skip_repeats(app, what, name, obj, skip, options):
    key = (getattr(obj, "__module__", None), getattr(obj, "__qualname__", None))
    if skip or key[1] is None or what != "module":
        return None
    if key in _documented:
        return True
    _documented.add(key)
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _plain_docstring)
    app.connect("autodoc-skip-member", _skip_repeats)
