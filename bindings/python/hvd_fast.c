/*
 * hvd._hvd_fast — the lean hot path of the Python binding.
 *
 * SWIG's generic wrappers (hvd.hvd_c) cost several microseconds per tensor:
 * a proxy object for every DLTensor and option struct, one Python call per
 * field, a Python Handle object. A training step submits one allreduce per
 * gradient, so this module does the per-tensor work in C over the same public
 * functions of hvd.h (nothing of the core's internals):
 *
 *   Handle     the result of every *_async call (also of the generic path in
 *              hvd.ops, which passes a `finish` callable): poll/wait/release,
 *              the GIL released while hvd_wait blocks.
 *   allreduce  submits an allreduce of a contiguous CPU torch tensor straight
 *              from the tensor's attributes, or returns None when the tensor
 *              needs the generic path (numpy, CUDA, non-contiguous...).
 *   allreduce_async_
 *              hvd.allreduce_async_ (Horovod's signature) over `allreduce`,
 *              handing what it declines to the Python implementation.
 *   grouped_allreduce
 *              the same for a group of tensors under one handle.
 *   Slot       one per DistributedOptimizer parameter: name, options and the
 *              DLTensor of the last gradient seen are kept between steps.
 *   sweep      releases handles that were dropped while still running.
 *
 * hvd never imports torch: the Python side registers torch's types and dtypes
 * (register_torch) the first time it meets a torch tensor.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h>

#include "hvd/hvd.h"

#define MAX_DIMS 32 /* hvd's own limit on ndim */
#define MAX_DTYPES 32

/* ------------------------------------------------------ registered objects */

typedef struct {
  PyObject* dtype; /* a torch.dtype (strong reference) */
  uint8_t code;
  uint8_t bits;
} DtypeEntry;

static PyTypeObject* g_tensor_type;    /* torch.Tensor */
static PyTypeObject* g_parameter_type; /* torch.nn.Parameter */
static PyObject* g_empty_like;         /* torch.empty_like */
static DtypeEntry g_dtypes[MAX_DTYPES];
static int g_ndtypes;
static PyObject* g_global_set;    /* hvd.global_process_set */
static PyObject* g_error_for;     /* hvd._errors.error_for(status) */
static PyObject* g_timeout_error; /* hvd.HvdTimeoutError */

static PyObject* s_data_ptr;
static PyObject* s_is_contiguous;
static PyObject* s_is_cpu;
static PyObject* s_dtype;
static PyObject* s_shape;
static PyObject* s_process_set_id;
static PyObject* s_wait;
static PyObject* s_poll;

/* torch.Tensor's own attributes, looked up once by register_torch: a getattr
 * by name walks the type's cache and the tensor's dict each time (0.08 of a
 * small tensor's 0.75 us submission). read_torch uses them only on exactly
 * Tensor or Parameter, where a lookup finds these same descriptors. */
enum { A_DTYPE, A_IS_CPU, A_SHAPE, A_IS_CONTIGUOUS, A_DATA_PTR, A_COUNT };
static PyObject* g_attr[A_COUNT];

static PyObject** const g_attr_name[A_COUNT] = {&s_dtype, &s_is_cpu, &s_shape, &s_is_contiguous,
                                                &s_data_ptr};

/* t.<attribute a>: a data descriptor's value, or a method called; by name
 * where register_torch found other descriptors than expected. */
static PyObject* torch_attr(PyObject* t, int a) {
  PyObject* d = g_attr[a];
  if (a >= A_IS_CONTIGUOUS) {
    return d ? PyObject_Vectorcall(d, &t, 1, NULL) : PyObject_CallMethodNoArgs(t, *g_attr_name[a]);
  }
  return d ? Py_TYPE(d)->tp_descr_get(d, t, (PyObject*)Py_TYPE(t))
           : PyObject_GetAttr(t, *g_attr_name[a]);
}

/* ------------------------------------------------------------------ errors */

/* The pending Python exception as one object (normalised, with traceback);
 * the error indicator is cleared. */
static PyObject* take_exception(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

static void raise_exception(PyObject* exc) {
  Py_INCREF(exc);
  PyObject* tb = PyException_GetTraceback(exc);
  PyObject* type = (PyObject*)Py_TYPE(exc);
  Py_INCREF(type);
  PyErr_Restore(type, exc, tb);
}

/* The HvdError for `status`; error_for reads hvd_last_error(), so call this
 * right after the failing hvd call. Returns NULL with an exception set only
 * when error_for itself failed. */
static PyObject* error_for(int status) {
  if (!g_error_for) {
    PyErr_Format(PyExc_RuntimeError, "hvd: %s (%s)", hvd_status_string((hvd_status)status),
                 hvd_last_error());
    return NULL;
  }
  return PyObject_CallFunction(g_error_for, "i", status);
}

static void raise_status(int status) {
  PyObject* exc = error_for(status);
  if (exc) {
    raise_exception(exc);
    Py_DECREF(exc);
  }
}

/* ----------------------------------------------------------------- orphans */
/* A handle dropped while its operation runs: hvd may still read and write
 * the memory of `keep` and `result`, so they stay referenced until a sweep
 * sees the operation finished and releases the handle. Only touched with the
 * GIL held; nothing in between calls back into Python. */

typedef struct {
  hvd_handle id;
  PyObject* keep;
  PyObject* result;
} Orphan;

static Orphan* g_orphans;
static Py_ssize_t g_norphans;
static Py_ssize_t g_orphans_cap;

/* Steals the references. Returns -1 (exception set) when out of memory. */
static int orphan_add(hvd_handle id, PyObject* keep, PyObject* result) {
  if (g_norphans == g_orphans_cap) {
    Py_ssize_t cap = g_orphans_cap ? 2 * g_orphans_cap : 64;
    Orphan* grown = PyMem_Realloc(g_orphans, (size_t)cap * sizeof(Orphan));
    if (!grown) {
      PyErr_NoMemory();
      return -1;
    }
    g_orphans = grown;
    g_orphans_cap = cap;
  }
  g_orphans[g_norphans].id = id;
  g_orphans[g_norphans].keep = keep;
  g_orphans[g_norphans].result = result;
  ++g_norphans;
  return 0;
}

/* Releases finished orphans (all of them when `force`: after hvd_shutdown
 * every operation has finished). References are dropped only after the
 * array is consistent again: a destructor may drop further handles. */
static void sweep(int force) {
  if (g_norphans == 0) return;
  Orphan* done = PyMem_Malloc((size_t)g_norphans * sizeof(Orphan));
  Py_ssize_t ndone = 0, kept = 0;
  for (Py_ssize_t i = 0; i < g_norphans; ++i) {
    Orphan o = g_orphans[i];
    if (done && (force || hvd_poll(o.id) != HVD_IN_PROGRESS)) {
      hvd_release(o.id);
      done[ndone++] = o;
    } else {
      g_orphans[kept++] = o;
    }
  }
  g_norphans = kept;
  for (Py_ssize_t i = 0; i < ndone; ++i) {
    Py_XDECREF(done[i].keep);
    Py_XDECREF(done[i].result);
  }
  PyMem_Free(done);
}

/* ------------------------------------------------------------------- Lease */
/* Results without a copy: an hvd handle whose result memory (allgather,
 * alltoall, reducescatter) a Python object borrows. take(hid), called by a
 * Handle's finish, moves the handle into a Lease, which releases it when the
 * last borrower is gone; the Handle then does not release it itself. */

typedef struct {
  PyObject ob_base; /* PyObject_HEAD */
  hvd_handle id;
} LeaseObject;

static hvd_handle g_taken; /* the handle take() moved during the current finish */

static void lease_dealloc(LeaseObject* self) {
  hvd_release(self->id);
  PyObject_Free(self);
}

static PyTypeObject LeaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hvd.Lease",
    .tp_basicsize = sizeof(LeaseObject),
    .tp_dealloc = (destructor)lease_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Owns a finished hvd handle whose result memory is borrowed; released when dropped.",
};

static PyObject* fast_take(PyObject* module, PyObject* arg) {
  (void)module;
  long long id = PyLong_AsLongLong(arg);
  if (id == -1 && PyErr_Occurred()) return NULL;
  LeaseObject* l = PyObject_New(LeaseObject, &LeaseType);
  if (!l) return NULL;
  l->id = id;
  g_taken = id;
  return (PyObject*)l;
}

/* ------------------------------------------------------------------ Handle */

typedef struct {
  PyObject ob_base; /* PyObject_HEAD */
  hvd_handle id;
  PyObject* keep;   /* memory the operation uses, besides result */
  PyObject* result; /* what wait() returns; set by finish on the generic path */
  PyObject* finish; /* callable(id) -> result, called once on success; or NULL */
  PyObject* error;  /* the exception of a failed operation */
  char done;        /* completed (or released): the hvd handle is gone */
} HandleObject;

static PyTypeObject HandleType;

static HandleObject* handle_new(hvd_handle id, PyObject* keep, PyObject* result) {
  HandleObject* h = PyObject_New(HandleObject, &HandleType);
  if (!h) return NULL;
  h->id = id;
  Py_XINCREF(keep);
  h->keep = keep;
  Py_XINCREF(result);
  h->result = result;
  h->finish = NULL;
  h->error = NULL;
  h->done = 0;
  return h;
}

/* Records the outcome of a finished operation and releases the hvd handle. */
static void handle_complete(HandleObject* h, int status) {
  PyObject* finish = h->finish;
  h->finish = NULL;
  hvd_handle outer = g_taken; /* a finish may complete other handles */
  int taken = 0;
  if (status == HVD_OK) {
    if (finish) {
      PyObject* id = PyLong_FromLongLong(h->id);
      g_taken = 0;
      PyObject* r = id ? PyObject_CallOneArg(finish, id) : NULL;
      taken = g_taken == h->id;
      Py_XDECREF(id);
      if (r) {
        Py_XSETREF(h->result, r);
      } else {
        h->error = take_exception(); /* a failed finish still releases below */
      }
    }
  } else {
    h->error = error_for(status); /* reads hvd_last_error before hvd_release */
    if (!h->error) h->error = take_exception();
  }
  g_taken = outer;
  h->done = 1;
  if (!taken) hvd_release(h->id); /* else a Lease owns it now */
  Py_CLEAR(h->keep);
  Py_XDECREF(finish);
}

/* Forget the operation: its memory stays referenced until it finishes. */
static int handle_release(HandleObject* h) {
  if (h->done) return 0;
  h->done = 1;
  Py_CLEAR(h->finish);
  if (hvd_poll(h->id) != HVD_IN_PROGRESS) {
    hvd_release(h->id);
    Py_CLEAR(h->keep);
    Py_CLEAR(h->result);
    return 0;
  }
  PyObject* keep = h->keep;
  PyObject* result = h->result;
  h->keep = NULL;
  h->result = NULL;
  return orphan_add(h->id, keep, result);
}

static PyObject* handle_finished_value(HandleObject* h) {
  if (h->error) {
    raise_exception(h->error);
    return NULL;
  }
  PyObject* r = h->result ? h->result : Py_None;
  Py_INCREF(r);
  return r;
}

static PyObject* handle_wait_impl(HandleObject* h, PyObject* timeout) {
  if (!h->done) {
    int64_t ms = -1;
    if (timeout && timeout != Py_None) {
      double t = PyFloat_AsDouble(timeout);
      if (t == -1.0 && PyErr_Occurred()) return NULL;
      ms = t > 0 ? (int64_t)(t * 1000) : 0;
    }
    int status = hvd_poll(h->id);
    if (status == HVD_IN_PROGRESS) {
      PyThreadState* ts = PyEval_SaveThread(); /* others run while we block */
      status = hvd_wait(h->id, ms);
      PyEval_RestoreThread(ts);
      if (h->done) return handle_finished_value(h); /* completed by another thread */
      if (status == HVD_ERR_TIMEOUT && hvd_poll(h->id) == HVD_IN_PROGRESS) {
        /* Our wait ran out; the operation goes on and may be waited on again. */
        PyObject* msg = PyUnicode_FromFormat("hvd: operation still running after %Ss", timeout);
        if (!msg) return NULL;
        PyObject* exc = PyObject_CallFunction(
            g_timeout_error ? g_timeout_error : PyExc_TimeoutError, "Oi", msg, status);
        Py_DECREF(msg);
        if (exc) {
          raise_exception(exc);
          Py_DECREF(exc);
        }
        return NULL;
      }
    }
    handle_complete(h, status);
  }
  return handle_finished_value(h);
}

static int handle_init(HandleObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"hid", "keep", "finish", NULL};
  long long id;
  PyObject *keep = Py_None, *finish = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "L|OO:Handle", kwlist, &id, &keep, &finish)) {
    return -1;
  }
  if (self->id != 0 || self->done) {
    PyErr_SetString(PyExc_RuntimeError, "Handle.__init__ called twice");
    return -1;
  }
  self->id = id;
  Py_INCREF(keep);
  Py_XSETREF(self->keep, keep);
  if (finish != Py_None) {
    Py_INCREF(finish);
    Py_XSETREF(self->finish, finish);
  }
  return 0;
}

static void handle_dealloc(HandleObject* self) {
  if (!self->done && self->id != 0) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* dealloc must not clobber a pending error */
    if (handle_release(self) < 0) PyErr_WriteUnraisable((PyObject*)self);
    PyErr_Restore(type, value, tb);
  }
  Py_XDECREF(self->keep);
  Py_XDECREF(self->result);
  Py_XDECREF(self->finish);
  Py_XDECREF(self->error);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* handle_poll(HandleObject* self, PyObject* unused) {
  (void)unused;
  if (!self->done) {
    int status = hvd_poll(self->id);
    if (status == HVD_IN_PROGRESS) Py_RETURN_FALSE;
    handle_complete(self, status);
  }
  Py_RETURN_TRUE;
}

static PyObject* handle_wait(HandleObject* self, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  PyObject* timeout = Py_None;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs + nkw > 1 || (nkw == 1 && !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0))) ||
      (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "timeout"))) {
    PyErr_SetString(PyExc_TypeError, "wait(timeout=None) takes one optional argument, timeout");
    return NULL;
  }
  if (nargs + nkw == 1) timeout = args[0];
  return handle_wait_impl(self, timeout);
}

static PyObject* handle_release_method(HandleObject* self, PyObject* unused) {
  (void)unused;
  if (handle_release(self) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef handle_methods[] = {
    {"poll", (PyCFunction)handle_poll, METH_NOARGS, "poll() -> bool: finished? (never blocks)"},
    {"wait", (PyCFunction)(void (*)(void))handle_wait, METH_FASTCALL | METH_KEYWORDS,
     "wait(timeout=None) -> result: blocks without holding the GIL; raises the operation's "
     "error, or HvdTimeoutError after `timeout` seconds (the operation goes on)"},
    {"release", (PyCFunction)handle_release_method, METH_NOARGS,
     "release(): forget the operation; its result is discarded and its memory stays "
     "referenced until it completes"},
    {NULL, NULL, 0, NULL}};

static PyMemberDef handle_members[] = {
    {"_id", T_LONGLONG, offsetof(HandleObject, id), READONLY, "the hvd_handle"},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hvd.Handle",
    .tp_basicsize = sizeof(HandleObject),
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "The pending result of an *_async call.\n\n"
        "poll() -> bool: finished? (never blocks). wait(timeout=None) -> result: blocks\n"
        "(without holding the GIL) and returns the operation's result, or raises its\n"
        "error as an HvdError. release(): forget the handle early.\n\n"
        "Handle(hid, keep, finish=None): owns hvd handle `hid`; `keep` is referenced\n"
        "until the operation finishes; finish(hid) gives the result on success.",
    .tp_methods = handle_methods,
    .tp_members = handle_members,
    .tp_init = (initproc)handle_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------ torch -> DLTensor */

/* Reads a torch tensor into `d` (shape into `shape`) when it can be handed
 * to hvd as it is: exactly torch.Tensor or Parameter (subclasses may
 * override attribute access), CPU, C-contiguous, a dtype hvd reduces.
 * 1: done. 0: not eligible, use the generic path (no exception). -1: error. */
static int read_torch(PyObject* t, DLTensor* d, int64_t* shape) {
  if (!g_tensor_type || (Py_TYPE(t) != g_tensor_type && Py_TYPE(t) != g_parameter_type)) {
    return 0;
  }
  PyObject* dt = torch_attr(t, A_DTYPE);
  if (!dt) return -1;
  int k = 0;
  while (k < g_ndtypes && g_dtypes[k].dtype != dt) ++k;
  Py_DECREF(dt);
  if (k == g_ndtypes) return 0;

  PyObject* v = torch_attr(t, A_IS_CPU);
  if (!v) return -1;
  Py_DECREF(v);
  if (v != Py_True) return 0;

  /* Sparse and other storage-less layouts fail here: generic path. */
  v = torch_attr(t, A_IS_CONTIGUOUS);
  if (!v) {
    PyErr_Clear();
    return 0;
  }
  Py_DECREF(v);
  if (v != Py_True) return 0;
  v = torch_attr(t, A_DATA_PTR);
  if (!v) {
    PyErr_Clear();
    return 0;
  }
  void* data = PyLong_AsVoidPtr(v);
  Py_DECREF(v);
  if (!data && PyErr_Occurred()) return -1;

  PyObject* sh = torch_attr(t, A_SHAPE);
  if (!sh) return -1;
  if (!PyTuple_Check(sh) || PyTuple_GET_SIZE(sh) > MAX_DIMS) {
    Py_DECREF(sh);
    return 0;
  }
  const int ndim = (int)PyTuple_GET_SIZE(sh);
  for (int i = 0; i < ndim; ++i) {
    shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(sh, i));
    if (shape[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(sh);
      return -1;
    }
  }
  Py_DECREF(sh);
  d->data = data;
  d->device.device_type = kDLCPU;
  d->device.device_id = 0;
  d->ndim = ndim;
  d->dtype.code = g_dtypes[k].code;
  d->dtype.bits = g_dtypes[k].bits;
  d->dtype.lanes = 1;
  d->shape = shape;
  d->strides = NULL;
  d->byte_offset = 0;
  return 1;
}

/* A tensor's data_ptr() (NULL with an exception set on failure). */
static int data_ptr_of(PyObject* t, void** data) {
  PyObject* v = torch_attr(t, A_DATA_PTR);
  if (!v) return -1;
  *data = PyLong_AsVoidPtr(v);
  Py_DECREF(v);
  return (*data == NULL && PyErr_Occurred()) ? -1 : 0;
}

/* process_set argument -> id. 1: ok. 0: generic path (unregistered set: it
 * raises the error that names the set). -1: error. */
static int read_process_set(PyObject* ps, int32_t* id) {
  if (ps == g_global_set || ps == Py_None) {
    *id = 0;
    return 1;
  }
  PyObject* v = PyObject_GetAttr(ps, s_process_set_id);
  if (!v) return -1;
  if (v == Py_None) {
    Py_DECREF(v);
    return 0;
  }
  long x = PyLong_AsLong(v);
  Py_DECREF(v);
  if (x == -1 && PyErr_Occurred()) return -1;
  *id = (int32_t)x;
  return 1;
}

/* op argument: None means Average. 1: ok, 0: generic path. */
static int read_op(PyObject* op, int* out) {
  if (op == Py_None) {
    *out = HVD_OP_AVERAGE;
    return 1;
  }
  if (!PyLong_CheckExact(op)) return 0;
  long x = PyLong_AsLong(op);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  *out = (int)x;
  return 1;
}

/* Options from the prescale/postscale/process_set arguments. 1/0/-1. */
static int read_options(PyObject* pre, PyObject* post, PyObject* ps, hvd_op_options* o) {
  hvd_op_options init = HVD_OP_OPTIONS_INIT;
  *o = init;
  o->prescale_factor = PyFloat_AsDouble(pre);
  if (o->prescale_factor == -1.0 && PyErr_Occurred()) return -1;
  o->postscale_factor = PyFloat_AsDouble(post);
  if (o->postscale_factor == -1.0 && PyErr_Occurred()) return -1;
  return read_process_set(ps, &o->process_set);
}

/* op, prescale, postscale, process_set (args[0..3]) -> *op, *o. 1: ok,
 * 0: generic path, -1: error (exception set). */
static int read_reduce_args(PyObject* const* args, int* op, hvd_op_options* o) {
  if (!read_op(args[0], op)) return 0;
  return read_options(args[1], args[2], args[3], o);
}

/* A new tensor for a contiguous input's result (torch.empty_like keeps the
 * layout); its data pointer in *data. NULL with an exception on failure. */
static PyObject* new_output(PyObject* like, void** data) {
  PyObject* o = PyObject_CallOneArg(g_empty_like, like);
  if (o && data_ptr_of(o, data) < 0) Py_CLEAR(o);
  return o;
}

/* allreduce(tensor, output, name, op, prescale, postscale, process_set)
 *   -> Handle, or None when the generic path must do it.
 * output: the same object as tensor (in place), or None (a new tensor from
 * torch.empty_like). The handle's wait() returns output. */
static PyObject* fast_allreduce(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError,
                    "allreduce(tensor, output, name, op, prescale, postscale, process_set)");
    return NULL;
  }
  PyObject *tensor = args[0], *output = args[1], *name = args[2];
  int64_t shape[MAX_DIMS];
  DLTensor din;
  int op, r;
  hvd_op_options o;
  const char* cname = NULL;
  if (name != Py_None) {
    if (!PyUnicode_Check(name)) Py_RETURN_NONE;
    cname = PyUnicode_AsUTF8(name);
    if (!cname) return NULL;
  }
  if ((r = read_reduce_args(args + 3, &op, &o)) <= 0) {
    if (r < 0) return NULL;
    Py_RETURN_NONE;
  }
  if ((r = read_torch(tensor, &din, shape)) <= 0) {
    if (r < 0) return NULL;
    Py_RETURN_NONE;
  }
  DLTensor dout = din;
  PyObject* out;
  if (output == tensor) {
    Py_INCREF(tensor);
    out = tensor;
  } else if (output == Py_None) {
    if (!(out = new_output(tensor, &dout.data))) return NULL;
  } else {
    PyErr_SetString(PyExc_ValueError, "allreduce: output must be the input tensor or None");
    return NULL;
  }
  sweep(0);
  hvd_handle id = 0;
  int status = hvd_allreduce_async(cname, &din, &dout, (hvd_reduce_op)op, &o, &id);
  if (status != HVD_OK) {
    Py_DECREF(out);
    raise_status(status);
    return NULL;
  }
  HandleObject* h = handle_new(id, out == tensor ? NULL : tensor, out);
  Py_DECREF(out);
  if (!h) {
    hvd_release(id); /* running operations may be released; out is then unused */
    return NULL;
  }
  return (PyObject*)h;
}

/* allreduce_async_(tensor, name=None, op=None, prescale_factor=1.0,
 *                  postscale_factor=1.0, process_set=global_process_set,
 *                  average=None) -> Handle
 * hvd.allreduce_async_ itself, in C: a Python frame with keyword arguments
 * in front of `allreduce` cost about 0.2 us, a tenth of a small tensor's
 * whole round trip through hvd.torch. What the lean path does not take (average=, tensors it
 * declines, arguments it does not know) goes with the same arguments to the
 * Python function given to set_allreduce_async_fallback. */
static PyObject* g_inplace_fallback;
static PyObject* g_one; /* 1.0 */
static const char* const kInplaceKeywords[] = {
    "name", "op", "prescale_factor", "postscale_factor", "process_set", "average"};

static PyObject* fast_allreduce_async_(PyObject* module, PyObject* const* args, size_t nargsf,
                                       PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  /* tensor, then the keywords' values in kInplaceKeywords order */
  PyObject* v[7] = {NULL, Py_None, Py_None, g_one, g_one, g_global_set, Py_None};
  int lean = g_one && g_global_set && nargs >= 1 && nargs <= 7;
  for (Py_ssize_t i = 0; lean && i < nargs; ++i) v[i] = args[i];
  for (Py_ssize_t k = 0; lean && k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    int j = 0;
    if (!key) return NULL;
    while (j < 6 && strcmp(key, kInplaceKeywords[j]) != 0) ++j;
    if (j == 6 || j + 1 < nargs) {
      lean = 0; /* unknown, or given twice: the Python form says so */
    } else {
      v[j + 1] = args[nargs + k];
    }
  }
  if (lean && v[6] == Py_None) {
    PyObject* a[7] = {v[0], v[0], v[1], v[2], v[3], v[4], v[5]};
    PyObject* h = fast_allreduce(module, a, 7);
    if (h != Py_None) return h; /* the handle, or NULL with the error */
    Py_DECREF(h);
  }
  if (!g_inplace_fallback) {
    PyErr_SetString(PyExc_RuntimeError, "hvd._hvd_fast: allreduce_async_ has no fallback");
    return NULL;
  }
  return PyObject_Vectorcall(g_inplace_fallback, args, nargsf, kwnames);
}

static PyObject* fast_set_allreduce_async_fallback(PyObject* module, PyObject* fn) {
  (void)module;
  Py_INCREF(fn);
  Py_XSETREF(g_inplace_fallback, fn);
  Py_RETURN_NONE;
}

/* ------------------------------------------------------- grouped allreduce */
/* One grouped allreduce's descriptors: hvd copies them at submission, so
 * they live for the call only. */
typedef struct {
  int n;
  DLTensor* in;
  DLTensor* out;  /* the same array as `in` when in place */
  int64_t* shape; /* MAX_DIMS per tensor, for in and out alike */
  const DLTensor** in_ptr;
  DLTensor** out_ptr;
  const char** names; /* NULL: automatic names */
} Group;

static void group_free(Group* g) {
  if (g->out != g->in) PyMem_Free(g->out);
  PyMem_Free(g->in);
  PyMem_Free(g->shape);
  PyMem_Free(g->in_ptr);
  PyMem_Free(g->out_ptr);
  PyMem_Free(g->names);
}

/* Names: None, or one str per tensor (borrowed from `names`, which the
 * caller keeps alive). 1: ok, 0: generic path (it names the error). */
static int group_names(Group* g, PyObject* names) {
  if (names == Py_None) return 1;
  if (!(PyList_CheckExact(names) || PyTuple_CheckExact(names)) ||
      PySequence_Fast_GET_SIZE(names) != g->n) {
    return 0;
  }
  g->names = PyMem_Calloc((size_t)g->n, sizeof(char*));
  if (!g->names) return -1;
  PyObject** items = PySequence_Fast_ITEMS(names);
  for (int i = 0; i < g->n; ++i) {
    PyObject* s = items[i];
    if (!PyUnicode_Check(s)) return 0;
    if (!(g->names[i] = PyUnicode_AsUTF8(s))) return -1;
  }
  return 1;
}

/* Reads every tensor of `seq` (all must take the lean path) and, out of
 * place, makes their outputs; *results gets the list wait() returns.
 * 1: ok, 0: generic path, -1: error (exception set). */
static int group_read(Group* g, PyObject* seq, int in_place, PyObject** results) {
  const size_t n = (size_t)g->n;
  g->in = PyMem_Calloc(n, sizeof(DLTensor));
  g->shape = PyMem_Calloc(n * MAX_DIMS, sizeof(int64_t));
  g->in_ptr = PyMem_Calloc(n, sizeof(DLTensor*));
  g->out_ptr = PyMem_Calloc(n, sizeof(DLTensor*));
  g->out = in_place ? g->in : PyMem_Calloc(n, sizeof(DLTensor));
  if (!g->in || !g->shape || !g->in_ptr || !g->out_ptr || !g->out) return -1;
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (int i = 0; i < g->n; ++i) {
    int r = read_torch(items[i], &g->in[i], g->shape + (size_t)i * MAX_DIMS);
    if (r <= 0) return r;
    g->in_ptr[i] = &g->in[i];
    g->out_ptr[i] = &g->out[i];
  }
  if (in_place) return (*results = PySequence_List(seq)) ? 1 : -1;
  if (!(*results = PyList_New(g->n))) return -1;
  for (int i = 0; i < g->n; ++i) {
    g->out[i] = g->in[i];
    PyObject* o = new_output(items[i], &g->out[i].data);
    if (!o) return -1;
    PyList_SET_ITEM(*results, i, o);
  }
  return 1;
}

/* grouped_allreduce(tensors, in_place, names, op, prescale, postscale,
 *                   process_set) -> Handle, or None when the generic path
 * must do it (a tensor off the lean path, names not a list or tuple of
 * str). The generic path prepares each tensor in Python, about 2.5 us a
 * tensor: 0.4 ms for a model's 174 gradients, an eighth of their allreduce.
 * wait() returns a new list: the tensors themselves (in place) or their
 * results. */
static PyObject* fast_grouped_allreduce(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError,
                    "grouped_allreduce(tensors, in_place, names, op, prescale, postscale, "
                    "process_set)");
    return NULL;
  }
  int op, r;
  hvd_op_options o;
  if ((r = read_reduce_args(args + 3, &op, &o)) <= 0) {
    if (r < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyObject* seq = PySequence_Fast(args[0], "grouped_allreduce: tensors must be a sequence");
  if (!seq) return NULL;
  Group g = {0};
  PyObject *results = NULL, *handle = NULL;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  r = n > 0 && n <= INT32_MAX ? 1 : 0; /* the generic path reports an empty group */
  g.n = (int)n;
  if (r > 0) r = group_names(&g, args[2]);
  if (r > 0) r = group_read(&g, seq, PyObject_IsTrue(args[1]), &results);
  if (r > 0) {
    sweep(0);
    hvd_handle id = 0;
    int status =
        hvd_grouped_allreduce_async(g.names, g.in_ptr, g.out_ptr, g.n, (hvd_reduce_op)op, &o, &id);
    if (status != HVD_OK) {
      raise_status(status);
    } else if (!(handle = (PyObject*)handle_new(id, seq, results))) {
      hvd_release(id); /* running operations may be released; results stay unused */
    }
  } else if (r < 0 && !PyErr_Occurred()) {
    PyErr_NoMemory();
  }
  group_free(&g);
  Py_XDECREF(results);
  Py_DECREF(seq);
  if (r == 0) Py_RETURN_NONE;
  return handle;
}

/* ------------------------------------------------------------------- Slot */
/* One parameter of a DistributedOptimizer: what stays the same from step to
 * step is kept here (the name, op and options, the DLTensor of the last
 * gradient). The cached DLTensor is reused when the gradient is the same
 * tensor object (a weak reference) at the same data_ptr: its dtype, device,
 * shape and layout cannot have changed without a new tensor or storage. */

typedef struct {
  PyObject ob_base; /* PyObject_HEAD */
  char* name;       /* NULL: automatic name */
  int op;
  PyObject* prescale;
  PyObject* postscale;
  PyObject* process_set; /* resolved per call: elastic re-registers sets */
  PyObject* last;        /* weak reference to the last gradient read, or NULL */
  DLTensor dl;
  int64_t shape[MAX_DIMS];
} SlotObject;

static int slot_init(SlotObject* self, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"name", "op", "prescale", "postscale", "process_set", NULL};
  PyObject *name, *op, *pre, *post, *ps;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO:Slot", kwlist, &name, &op, &pre, &post,
                                   &ps)) {
    return -1;
  }
  if (!read_op(op, &self->op)) {
    PyErr_SetString(PyExc_TypeError, "Slot: op must be an int or None");
    return -1;
  }
  PyMem_Free(self->name);
  self->name = NULL;
  if (name != Py_None) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(name, &n);
    if (!s) return -1;
    self->name = PyMem_Malloc((size_t)n + 1);
    if (!self->name) {
      PyErr_NoMemory();
      return -1;
    }
    memcpy(self->name, s, (size_t)n + 1);
  }
  if (PyFloat_AsDouble(pre) == -1.0 && PyErr_Occurred()) return -1;
  if (PyFloat_AsDouble(post) == -1.0 && PyErr_Occurred()) return -1;
  Py_INCREF(pre);
  Py_XSETREF(self->prescale, pre);
  Py_INCREF(post);
  Py_XSETREF(self->postscale, post);
  Py_INCREF(ps);
  Py_XSETREF(self->process_set, ps);
  Py_CLEAR(self->last);
  return 0;
}

static void slot_dealloc(SlotObject* self) {
  PyMem_Free(self->name);
  Py_XDECREF(self->prescale);
  Py_XDECREF(self->postscale);
  Py_XDECREF(self->process_set);
  Py_XDECREF(self->last);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* slot.allreduce_(tensor) -> Handle (in place; wait() returns tensor), or
 * None when the generic path must do it. */
static PyObject* slot_allreduce_(SlotObject* self, PyObject* tensor) {
  if (!self->prescale) {
    PyErr_SetString(PyExc_RuntimeError, "Slot was not initialised");
    return NULL;
  }
  hvd_op_options o;
  int r = read_options(self->prescale, self->postscale, self->process_set, &o);
  if (r <= 0) {
    if (r < 0) return NULL;
    Py_RETURN_NONE;
  }
  int cached = 0;
  if (self->last && PyWeakref_GET_OBJECT(self->last) == tensor) {
    void* data;
    if (data_ptr_of(tensor, &data) < 0) {
      PyErr_Clear();
      Py_RETURN_NONE;
    }
    cached = data == self->dl.data;
  }
  if (!cached) {
    Py_CLEAR(self->last);
    if ((r = read_torch(tensor, &self->dl, self->shape)) <= 0) {
      if (r < 0) return NULL;
      Py_RETURN_NONE;
    }
    self->last = PyWeakref_NewRef(tensor, NULL);
    if (!self->last) PyErr_Clear(); /* no cache then; the submit goes on */
  }
  sweep(0);
  hvd_handle id = 0;
  int status =
      hvd_allreduce_async(self->name, &self->dl, &self->dl, (hvd_reduce_op)self->op, &o, &id);
  if (status != HVD_OK) {
    raise_status(status);
    return NULL;
  }
  HandleObject* h = handle_new(id, NULL, tensor);
  if (!h) hvd_release(id);
  return (PyObject*)h;
}

static PyMethodDef slot_methods[] = {
    {"allreduce_", (PyCFunction)slot_allreduce_, METH_O,
     "allreduce_(tensor) -> Handle (in place), or None when the generic path must do it"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject SlotType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hvd._hvd_fast.Slot",
    .tp_basicsize = sizeof(SlotObject),
    .tp_dealloc = (destructor)slot_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "Slot(name, op, prescale, postscale, process_set): the cached allreduce of one "
        "parameter's gradient",
    .tp_methods = slot_methods,
    .tp_init = (initproc)slot_init,
    .tp_new = PyType_GenericNew,
};

/* -------------------------------------------------------- module functions */

/* synchronize(handle): handle.wait(), without the attribute lookup for ours. */
static PyObject* fast_synchronize(PyObject* module, PyObject* handle) {
  (void)module;
  if (Py_TYPE(handle) == &HandleType) return handle_wait_impl((HandleObject*)handle, Py_None);
  return PyObject_CallMethodNoArgs(handle, s_wait);
}

static PyObject* fast_poll(PyObject* module, PyObject* handle) {
  (void)module;
  if (Py_TYPE(handle) == &HandleType) return handle_poll((HandleObject*)handle, NULL);
  return PyObject_CallMethodNoArgs(handle, s_poll);
}

static PyObject* fast_sweep(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  (void)module;
  int force = 0;
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "sweep(force=False)");
    return NULL;
  }
  if (nargs == 1 && (force = PyObject_IsTrue(args[0])) < 0) return NULL;
  sweep(force);
  Py_RETURN_NONE;
}

static PyObject* fast_orphan_count(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  return PyLong_FromSsize_t(g_norphans);
}

/* dlpack_device(capsule) -> (device_type, device_id) of an unconsumed DLPack
 * capsule ("dltensor"); ValueError for any other object. */
static PyObject* fast_dlpack_device(PyObject* module, PyObject* capsule) {
  (void)module;
  if (!PyCapsule_IsValid(capsule, "dltensor")) {
    const char* name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError,
                 "hvd takes DLPack capsules named \"dltensor\" (not yet consumed); got %s%s%s",
                 name ? "a capsule named \"" : Py_TYPE(capsule)->tp_name, name ? name : "",
                 name ? "\"" : "");
    return NULL;
  }
  const DLManagedTensor* t = PyCapsule_GetPointer(capsule, "dltensor");
  if (!t) return NULL;
  return Py_BuildValue("(ii)", (int)t->dl_tensor.device.device_type,
                       (int)t->dl_tensor.device.device_id);
}

/* register_torch(Tensor, Parameter, empty_like, {dtype: (code, bits)}) */
static PyObject* fast_register_torch(PyObject* module, PyObject* args) {
  (void)module;
  PyObject *tensor, *parameter, *empty_like, *table;
  if (!PyArg_ParseTuple(args, "O!O!OO!:register_torch", &PyType_Type, &tensor, &PyType_Type,
                        &parameter, &empty_like, &PyDict_Type, &table)) {
    return NULL;
  }
  if (PyDict_Size(table) > MAX_DTYPES) {
    PyErr_SetString(PyExc_ValueError, "register_torch: too many dtypes");
    return NULL;
  }
  /* Tensor's descriptors, each kept where it is what torch_attr expects and
   * Parameter's too; otherwise that attribute is read by name. */
  for (int a = 0; a < A_COUNT; ++a) {
    PyObject* d = PyObject_GetAttr(tensor, *g_attr_name[a]);
    PyObject* p = d ? PyObject_GetAttr(parameter, *g_attr_name[a]) : NULL;
    PyErr_Clear();
    /* A method descriptor, or a data descriptor (no instance dict shadows it). */
    const int expected = a >= A_IS_CONTIGUOUS
                             ? d && Py_IS_TYPE(d, &PyMethodDescr_Type)
                             : d && Py_TYPE(d)->tp_descr_get && Py_TYPE(d)->tp_descr_set;
    if (!expected || p != d) Py_CLEAR(d);
    Py_XDECREF(p);
    Py_XSETREF(g_attr[a], d);
  }
  DtypeEntry entries[MAX_DTYPES];
  int n = 0;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(table, &pos, &key, &value)) {
    int code, bits;
    if (!PyArg_ParseTuple(value, "ii", &code, &bits)) return NULL;
    entries[n].dtype = key;
    entries[n].code = (uint8_t)code;
    entries[n].bits = (uint8_t)bits;
    ++n;
  }
  for (int i = 0; i < g_ndtypes; ++i) Py_DECREF(g_dtypes[i].dtype);
  for (int i = 0; i < n; ++i) {
    Py_INCREF(entries[i].dtype);
    g_dtypes[i] = entries[i];
  }
  g_ndtypes = n;
  Py_INCREF(tensor);
  Py_XSETREF(g_tensor_type, (PyTypeObject*)tensor);
  Py_INCREF(parameter);
  Py_XSETREF(g_parameter_type, (PyTypeObject*)parameter);
  Py_INCREF(empty_like);
  Py_XSETREF(g_empty_like, empty_like);
  Py_RETURN_NONE;
}

/* setup(global_process_set, error_for, HvdTimeoutError) */
static PyObject* fast_setup(PyObject* module, PyObject* args) {
  (void)module;
  PyObject *global_set, *err, *timeout;
  if (!PyArg_ParseTuple(args, "OOO:setup", &global_set, &err, &timeout)) return NULL;
  Py_INCREF(global_set);
  Py_XSETREF(g_global_set, global_set);
  Py_INCREF(err);
  Py_XSETREF(g_error_for, err);
  Py_INCREF(timeout);
  Py_XSETREF(g_timeout_error, timeout);
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"allreduce", (PyCFunction)(void (*)(void))fast_allreduce, METH_FASTCALL,
     "allreduce(tensor, output, name, op, prescale, postscale, process_set) -> Handle or None"},
    {"allreduce_async_", (PyCFunction)(void (*)(void))fast_allreduce_async_,
     METH_FASTCALL | METH_KEYWORDS,
     "allreduce_async_(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0, "
     "process_set=global_process_set, average=None) -> Handle\n\nReduce `tensor` in place "
     "over the ranks (op=None: Average), asynchronously; the Handle's wait() returns it."},
    {"grouped_allreduce", (PyCFunction)(void (*)(void))fast_grouped_allreduce, METH_FASTCALL,
     "grouped_allreduce(tensors, in_place, names, op, prescale, postscale, process_set) -> "
     "Handle or None"},
    {"set_allreduce_async_fallback", (PyCFunction)fast_set_allreduce_async_fallback, METH_O,
     "set_allreduce_async_fallback(fn): where allreduce_async_ sends what it does not take"},
    {"synchronize", (PyCFunction)fast_synchronize, METH_O,
     "synchronize(handle): wait for an operation and return its result"},
    {"poll", (PyCFunction)fast_poll, METH_O, "poll(handle) -> bool"},
    {"sweep", (PyCFunction)(void (*)(void))fast_sweep, METH_FASTCALL,
     "sweep(force=False): release dropped handles whose operations finished"},
    {"take", (PyCFunction)fast_take, METH_O,
     "take(hid) -> Lease: from a Handle's finish, keep handle hid (and its result's "
     "memory) until the Lease is dropped"},
    {"orphan_count", (PyCFunction)fast_orphan_count, METH_NOARGS,
     "number of dropped handles still waiting for their operation"},
    {"dlpack_device", (PyCFunction)fast_dlpack_device, METH_O,
     "dlpack_device(capsule) -> (device_type, device_id) of a \"dltensor\" capsule"},
    {"register_torch", (PyCFunction)fast_register_torch, METH_VARARGS,
     "register_torch(Tensor, Parameter, empty_like, {dtype: (code, bits)})"},
    {"setup", (PyCFunction)fast_setup, METH_VARARGS,
     "setup(global_process_set, error_for, HvdTimeoutError)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT,
    "_hvd_fast",
    "The lean per-tensor path of hvd's Python binding (see hvd_fast.c).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL};

PyMODINIT_FUNC PyInit__hvd_fast(void) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_data_ptr, "data_ptr"}, {&s_is_contiguous, "is_contiguous"},
               {&s_is_cpu, "is_cpu"},     {&s_dtype, "dtype"},
               {&s_shape, "shape"},       {&s_process_set_id, "process_set_id"},
               {&s_wait, "wait"},         {&s_poll, "poll"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text))) {
      return NULL;
    }
  }
  if (!g_one && !(g_one = PyFloat_FromDouble(1.0))) return NULL;
  if (PyType_Ready(&HandleType) < 0 || PyType_Ready(&SlotType) < 0 ||
      PyType_Ready(&LeaseType) < 0) {
    return NULL;
  }
  PyObject* m = PyModule_Create(&fast_module);
  if (!m) return NULL;
  Py_INCREF(&HandleType);
  if (PyModule_AddObject(m, "Handle", (PyObject*)&HandleType) < 0) {
    Py_DECREF(&HandleType);
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(&SlotType);
  if (PyModule_AddObject(m, "Slot", (PyObject*)&SlotType) < 0) {
    Py_DECREF(&SlotType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
