/*
 * hvd_python.i — the Python-only part of the SWIG binding: the module name,
 * GIL release around blocking calls, and typemaps from Python sequences to
 * the C arrays hvd.h takes. Everything else comes from ../swig/hvd.i.
 *
 * The generated module `hvd.hvd_c` (C extension `hvd._hvd_c`) is low level (status codes, DLTensor
 * objects); the idiomatic API is the hand-written package `hvd`.
 */
%module(package="hvd", threads="1") hvd_c

/* Hold the GIL by default (these calls are short) and drop it only around
 * calls that block on other ranks, so Python threads keep running and a
 * completion callback or another thread can make progress meanwhile. */
%nothread;
%thread hvd_init;
%thread hvd_init_with;
%thread hvd_init_mpi_comm;
%thread hvd_shutdown;
%thread hvd_wait;
%thread hvd_barrier;
%thread hvd_join;
%thread hvd_add_process_set;
%thread hvd_remove_process_set;

%{
#include <stdint.h>
#include <stdlib.h>
%}

/* ---------------------------------------------- int sequences -> int32_t[] */
/* (ranks, n) and (splits, nsplits): any sequence of ints; None -> NULL, 0. */
%typemap(in) (const int32_t* ranks, int n), (const int32_t* splits, int nsplits) {
  $1 = NULL;
  $2 = 0;
  if ($input != Py_None) {
    PyObject* seq = PySequence_Fast($input, "expected a sequence of ints or None");
    if (!seq) SWIG_fail;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    $1 = (int32_t*)malloc(sizeof(int32_t) * (size_t)(len > 0 ? len : 1));
    for (Py_ssize_t i = 0; i < len; ++i) {
      long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
      if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(seq);
        SWIG_fail;
      }
      $1[i] = (int32_t)v;
    }
    $2 = (int)len;
    Py_DECREF(seq);
  }
}
%typemap(freearg) (const int32_t* ranks, int n), (const int32_t* splits, int nsplits) {
  free($1);
}

/* hvd_result_splits(handle, splits, n, count): pass n, get the list back. */
%typemap(in) (int32_t* splits, int n) {
  long n = PyLong_AsLong($input);
  if (n == -1 && PyErr_Occurred()) SWIG_fail;
  if (n < 0) n = 0;
  $2 = (int)n;
  $1 = (int32_t*)calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));
}
%typemap(argout) (int32_t* splits, int n) {
  PyObject* list = PyList_New($2);
  for (int i = 0; i < $2; ++i) PyList_SET_ITEM(list, i, PyLong_FromLong($1[i]));
  $result = SWIG_Python_AppendOutput($result, list);
}
%typemap(freearg) (int32_t* splits, int n) { free($1); }

/* ------------------------------------------- grouped allreduce: lists in */
/* names: list of str/None (or None for all automatic names). */
%typemap(in) const char* const* names (PyObject* seq = NULL) {
  $1 = NULL;
  if ($input != Py_None) {
    seq = PySequence_Fast($input, "names: expected a sequence of str or None");
    if (!seq) SWIG_fail;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    const char** arr = (const char**)calloc((size_t)(len > 0 ? len : 1), sizeof(char*));
    for (Py_ssize_t i = 0; i < len; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
      if (item == Py_None) continue;
      /* UTF-8 buffer owned by the str object, which `seq` keeps alive. */
      arr[i] = PyUnicode_AsUTF8(item);
      if (!arr[i]) {
        free(arr);
        SWIG_fail;
      }
    }
    $1 = ($1_ltype)arr;
  }
}
%typemap(freearg) const char* const* names {
  free((void*)$1);
  Py_XDECREF(seq$argnum);
}

/* inputs/outputs: lists of hvd._hvd_c.DLTensor. */
%define HVD_TENSOR_LIST_TYPEMAP(TYPE, NAME)
%typemap(in) TYPE NAME {
  PyObject* seq = PySequence_Fast($input, "expected a sequence of DLTensor");
  if (!seq) SWIG_fail;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  /* $1_ltype: SWIG declares the local without the consts. */
  $1 = ($1_ltype)calloc((size_t)(len > 0 ? len : 1), sizeof(DLTensor*));
  for (Py_ssize_t i = 0; i < len; ++i) {
    void* p = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(PySequence_Fast_GET_ITEM(seq, i), &p, $descriptor(DLTensor*), 0))) {
      Py_DECREF(seq);
      PyErr_SetString(PyExc_TypeError, "expected a sequence of DLTensor");
      SWIG_fail;
    }
    $1[i] = (DLTensor*)p;
  }
  Py_DECREF(seq);
}
%typemap(freearg) TYPE NAME { free((void*)$1); }
%enddef
HVD_TENSOR_LIST_TYPEMAP(const DLTensor* const*, inputs)
HVD_TENSOR_LIST_TYPEMAP(DLTensor* const*, outputs)

%include "../swig/hvd.i"
