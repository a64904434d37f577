# Sphinx configuration of hvd's documentation site. Build it with
# scripts/docs.sh (which runs Doxygen first and sets HVD_DOCS_OUT); the
# Markdown pages stay Markdown (MyST).
import os
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

# The Julia API from the docstrings of bindings/julia/Hvd/src.
hvd_julia_sources = [os.path.join(ROOT, "bindings", "julia", "Hvd", "src", "Hvd.jl")]

html_theme = "sphinx_rtd_theme"
html_title = "hvd documentation"
html_show_sourcelink = False
html_theme_options = {"navigation_depth": 3}
