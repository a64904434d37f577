# Writes the javac @-file for the jar: SWIG's generated classes (their names
# depend on hvd.i, so they are only known after SWIG ran) plus the
# hand-written API. Usage: cmake -DGEN_DIR= -DSRC_DIR= -DOUT= -P list_sources.cmake
file(GLOB_RECURSE generated ${GEN_DIR}/*.java)
file(GLOB_RECURSE handwritten ${SRC_DIR}/*.java)
set(text "")
foreach(f IN LISTS generated handwritten)
  string(APPEND text "\"${f}\"\n")
endforeach()
# Written every time this runs (SWIG reran or a hand-written source
# changed): the jar depends on this file only, so javac must see it newer.
file(WRITE ${OUT} "${text}")
