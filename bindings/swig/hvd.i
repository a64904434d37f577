/*
 * hvd.i — the ONE SWIG interface to libhvd (capi/include/hvd/hvd.h).
 *
 * Language-neutral on purpose: bindings/python/hvd_python.i and
 * bindings/java/hvd_java.i %include this file after their own %module (the
 * first %module SWIG sees wins), and the Julia binding runs `swig -xml` on it
 * directly. Anything that only makes sense for one language (Python lists,
 * Java arrays, the GIL) belongs in that language's .i file, not here.
 *
 * What this file adds to the plain header:
 *  - DLPack's DLDevice/DLDataType/DLTensor, declared for SWIG only (the C
 *    compiler sees the real <dlpack/dlpack.h>), so every language can build
 *    a DLTensor from plain scalars: a data address, device, dtype and shape.
 *  - Constructors for the option structs that apply the *_INIT macros; a
 *    zero-filled struct would have struct_size 0 and be rejected.
 *  - OUTPUT typemaps for the scalar out-parameters (handle, set id, ...).
 */
%module hvd

%{
#include <stdlib.h>
#include <string.h>
#include <dlpack/dlpack.h>
#include "hvd/hvd.h"

/* A DLTensor followed by room for its shape, so one free() releases both and
 * hvd_result may point `shape` at hvd-owned memory without us ever freeing it. */
typedef struct hvd_swig_tensor_box {
  DLTensor tensor; /* first member: a box pointer is a DLTensor pointer */
  int64_t dims[];
} hvd_swig_tensor_box;
%}

%include <stdint.i>
#ifndef SWIGXML /* swig -xml (Julia) has no typemaps.i; it needs none */
%include <typemaps.i>
#endif

/* ------------------------------------------------------------ DLPack types */
/* Only what callers need; layouts match dlpack.h v0.6 through the real header. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLROCM = 10,
  kDLCUDAManaged = 13
} DLDeviceType;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5
} DLDataTypeCode;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* The raw pointers (data, shape, strides) are not exposed as members: every
 * language reaches them through the scalar accessors below instead. */
typedef struct {
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  uint64_t byte_offset;
} DLTensor;

%extend DLTensor {
  /* A compact (strides NULL) tensor at `data_address` with `ndim`
   * dimensions, all 0 until set_shape. The memory at data_address is not
   * owned: it must outlive every operation that uses this tensor. */
  DLTensor(int64_t data_address, int device_type, int device_id, int dtype_code, int dtype_bits,
           int ndim) {
    if (ndim < 0) ndim = 0;
    hvd_swig_tensor_box* box =
        (hvd_swig_tensor_box*)calloc(1, sizeof(hvd_swig_tensor_box) + sizeof(int64_t) * (size_t)ndim);
    if (!box) return NULL;
    box->tensor.data = (void*)(intptr_t)data_address;
    box->tensor.device.device_type = (DLDeviceType)device_type;
    box->tensor.device.device_id = device_id;
    box->tensor.dtype.code = (uint8_t)dtype_code;
    box->tensor.dtype.bits = (uint8_t)dtype_bits;
    box->tensor.dtype.lanes = 1;
    box->tensor.ndim = ndim;
    box->tensor.shape = box->dims;
    box->tensor.strides = NULL;
    return &box->tensor;
  }
  ~DLTensor() { free($self); /* the box; shape may point at hvd's memory */ }

  /* Returns 0, or -1 when i is out of range. */
  int set_shape(int i, int64_t extent) {
    if (i < 0 || i >= $self->ndim) return -1;
    $self->shape[i] = extent;
    return 0;
  }
  /* -1 when i is out of range. */
  int64_t shape_at(int i) {
    if (i < 0 || i >= $self->ndim || !$self->shape) return -1;
    return $self->shape[i];
  }
  int64_t data_address() { return (int64_t)(intptr_t)$self->data; }
  /* Bytes covered by data..data+nbytes (compact layout). */
  int64_t nbytes() {
    int64_t n = ($self->dtype.bits * $self->dtype.lanes + 7) / 8;
    for (int i = 0; i < $self->ndim; ++i) n *= $self->shape ? $self->shape[i] : 0;
    return n;
  }
}

/* ------------------------------------------------------------- the header */
/* SWIG does not follow #include: hvd.h's own #include of dlpack.h is skipped
 * and the declarations above stand in for it. SWIG's parser does not know
 * GCC attributes, so HVD_API's visibility attribute is expanded to nothing. */
#define __attribute__(x)
/* Out-parameters come back as extra return values (Python) or one-element
 * arrays (Java). */
#ifndef SWIGXML
%apply int64_t* OUTPUT { hvd_handle* handle };
%apply int32_t* OUTPUT { int32_t* id };
%apply int* OUTPUT { int* last_rank };
%apply int* OUTPUT { int* count };
/* ---- elastic (hvd_elastic_hosts_updated) ---- */
%apply int* OUTPUT { int* updated };
/* ---- end elastic ---- */
#endif

/* Struct members no language can use safely from its side. */
%ignore hvd_op_options::callback;
%ignore hvd_op_options::callback_user_data;
%ignore hvd_op_options::allocator;
%ignore hvd_op_options::allocator_user_data;
%ignore hvd_op_options::cuda_stream;

/* ---- point to point (hvd_send_async, hvd_recv_async, hvd_batch_isend_irecv) ---- */
%ignore hvd_p2p_options::callback;
%ignore hvd_p2p_options::callback_user_data;
/* ---- end point to point ---- */

%include "hvd/hvd.h"

%extend hvd_init_options {
  hvd_init_options() {
    hvd_init_options* o = (hvd_init_options*)malloc(sizeof(hvd_init_options));
    if (o) {
      hvd_init_options init = HVD_INIT_OPTIONS_INIT;
      *o = init;
    }
    return o;
  }
  ~hvd_init_options() { free($self); }
}

%extend hvd_op_options {
  hvd_op_options() {
    hvd_op_options* o = (hvd_op_options*)malloc(sizeof(hvd_op_options));
    if (o) {
      hvd_op_options init = HVD_OP_OPTIONS_INIT;
      *o = init;
    }
    return o;
  }
  ~hvd_op_options() { free($self); }
  /* cudaStream_t as an integer (torch: torch.cuda.current_stream().cuda_stream). */
  void set_cuda_stream(int64_t stream_address) {
    $self->cuda_stream = (void*)(intptr_t)stream_address;
  }
}

/* ---- point to point: option constructor and batch arrays ---- */
%extend hvd_p2p_options {
  hvd_p2p_options() {
    hvd_p2p_options* o = (hvd_p2p_options*)malloc(sizeof(hvd_p2p_options));
    if (o) {
      hvd_p2p_options init = HVD_P2P_OPTIONS_INIT;
      *o = init;
    }
    return o;
  }
  ~hvd_p2p_options() { free($self); }
}

#ifndef SWIGXML /* wrapper-side helpers, not libhvd symbols: Julia builds the array itself */
%inline %{
/* An array of n ops for hvd_batch_isend_irecv, each HVD_P2P_OP_INIT (NULL if
 * n < 1); free it with hvd_swig_p2p_ops_free once the batch completed. */
hvd_p2p_op* hvd_swig_p2p_ops_new(int n) {
  if (n < 1) return NULL;
  hvd_p2p_op* ops = (hvd_p2p_op*)malloc(sizeof(hvd_p2p_op) * (size_t)n);
  if (!ops) return NULL;
  for (int i = 0; i < n; ++i) {
    hvd_p2p_op init = HVD_P2P_OP_INIT;
    ops[i] = init;
  }
  return ops;
}
/* Sets element i (kind HVD_P2P_SEND or HVD_P2P_RECV); the tensor must
 * outlive the batch. Returns 0, or -1 when i is outside 0..n-1. */
int hvd_swig_p2p_ops_set(hvd_p2p_op* ops, int n, int i, int kind, DLTensor* tensor, int peer,
                         int tag) {
  if (!ops || i < 0 || i >= n) return -1;
  ops[i].kind = (hvd_p2p_kind)kind;
  ops[i].tensor = tensor;
  ops[i].peer = peer;
  ops[i].tag = tag;
  return 0;
}
void hvd_swig_p2p_ops_free(hvd_p2p_op* ops) { free(ops); }
%}
#endif
/* ---- end point to point ---- */
