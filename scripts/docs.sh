#!/usr/bin/env bash
# Builds hvd's documentation site into BUILD/docs/html with warnings as
# errors, and checks its internal links:
#   1. the Markdown pages' links and length (scripts/check_doc_links.py);
#   2. Doxygen's XML of hvd.h, every function described (C API reference);
#   3. Sphinx (MyST, Breathe, autodoc of BUILD/python, the Julia docstrings);
#   4. javadoc of org.hvd into html/java;
#   5. every relative link and anchor of the built pages.
# Needs the Debian packages of scripts/setup.sh and a build in BUILD with the
# Python package (cmake --build BUILD --target hvd_python).
#
#   scripts/docs.sh [BUILD]      (default: build)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
[ -d "$BUILD" ] || { echo "docs.sh: no build folder '$BUILD' (cmake -S . -B build first)" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
OUT=$BUILD/docs
PY=/usr/bin/python3
export HVD_DOCS_OUT=$OUT
cd "$ROOT"

step() { echo "docs: $*"; }
for tool in doxygen sphinx-build javadoc swig; do
  command -v $tool > /dev/null || { echo "docs.sh: $tool is missing (bash scripts/setup.sh)" >&2; exit 2; }
done
PYTHONPATH=$BUILD/python $PY -c "import hvd" 2> /dev/null || {
  echo "docs.sh: cannot import hvd from $BUILD/python (cmake --build $BUILD --target hvd_python)" >&2
  exit 2
}
rm -rf "$OUT/html" "$OUT/doctrees" "$OUT/doxygen" "$OUT/javasrc"
mkdir -p "$OUT"

step "checking the Markdown pages' links"
$PY scripts/check_doc_links.py "$ROOT"

step "Doxygen: capi/include/hvd/hvd.h"
doxygen docs/Doxyfile
$PY docs/_ext/check_c_api_xml.py "$OUT/doxygen/xml" capi/include/hvd/hvd.h

step "Sphinx: $OUT/html"
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} \
  sphinx-build -W --keep-going -q -b html -d "$OUT/doctrees" docs "$OUT/html"

step "javadoc: org.hvd"
# org.hvd calls the SWIG-generated org.hvd.jni classes: generate them here
# (javadoc needs their source, not their documentation).
mkdir -p "$OUT/javasrc/org/hvd/jni"
swig -java -package org.hvd.jni -outdir "$OUT/javasrc/org/hvd/jni" -Icapi/include \
  -Ibindings/java/native -o "$OUT/javasrc/hvd_java_wrap.c" bindings/java/hvd_java.i
javadoc -quiet -Xdoclint:all,-missing -Werror -d "$OUT/html/java" -windowtitle "hvd Java API" \
  -sourcepath "bindings/java/src:$OUT/javasrc" org.hvd > "$OUT/javadoc.log" 2>&1 || {
  cat "$OUT/javadoc.log" >&2
  exit 1
}

step "checking the site's links"
$PY scripts/check_doc_links.py --html "$OUT/html"
step "done: open $OUT/html/index.html"
