/* See hvd_jni_glue.h. */
#include "hvd_jni_glue.h"

#include <stddef.h>
#include <string.h>

/* Scratch layout: [DLTensor input][DLTensor output][int64_t shape[ndim]]. */
typedef struct scratch_layout {
  DLTensor input;
  DLTensor output;
  int64_t shape[];
} scratch_layout;

int64_t hvdj_scratch_bytes(int ndim) {
  return (int64_t)(sizeof(scratch_layout) + (size_t)(ndim > 0 ? ndim : 0) * sizeof(int64_t));
}

/* Fills both descriptors of `scratch` over `input`/`output`; NULL if the
 * arguments cannot describe a tensor (the C API then reports the error). */
static scratch_layout* describe(void* scratch, void* input, void* output, const int64_t* shape,
                                int ndim, int dtype_code, int dtype_bits) {
  if (scratch == NULL || ((uintptr_t)scratch % sizeof(int64_t)) != 0 || ndim < 0 ||
      (ndim > 0 && shape == NULL)) {
    return NULL;
  }
  scratch_layout* s = (scratch_layout*)scratch;
  if (ndim > 0) memcpy(s->shape, shape, (size_t)ndim * sizeof(int64_t));
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)dtype_code;
  t.dtype.bits = (uint8_t)dtype_bits;
  t.dtype.lanes = 1;
  t.shape = s->shape;
  t.data = input;
  s->input = t;
  t.data = output;
  s->output = t;
  return s;
}

hvd_status hvdj_allreduce_async(void* scratch, const char* name, void* input, void* output,
                                int64_t* shape, int ndim, int dtype_code, int dtype_bits,
                                hvd_reduce_op op, double prescale, double postscale,
                                int32_t process_set, int64_t* handle) {
  scratch_layout* s = describe(scratch, input, output, shape, ndim, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.prescale_factor = prescale;
  opts.postscale_factor = postscale;
  opts.process_set = process_set;
  return hvd_allreduce_async(name, s ? &s->input : NULL, s ? &s->output : NULL, op, &opts, handle);
}

hvd_status hvdj_allgather_async(void* scratch, const char* name, void* input, int64_t* shape,
                                int ndim, int dtype_code, int dtype_bits, int32_t process_set,
                                int64_t* handle) {
  scratch_layout* s = describe(scratch, input, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_allgather_async(name, s ? &s->input : NULL, &opts, handle);
}

hvd_status hvdj_broadcast_async(void* scratch, const char* name, void* data, int64_t* shape,
                                int ndim, int dtype_code, int dtype_bits, int root_rank,
                                int32_t process_set, int64_t* handle) {
  scratch_layout* s = describe(scratch, data, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_broadcast_async(name, s ? &s->input : NULL, root_rank, &opts, handle);
}

hvd_status hvdj_alltoall_async(void* scratch, const char* name, void* input, int64_t* shape,
                               int ndim, int dtype_code, int dtype_bits, int32_t* splits,
                               int nsplits, int32_t process_set, int64_t* handle) {
  scratch_layout* s = describe(scratch, input, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_alltoall_async(name, s ? &s->input : NULL, splits, splits ? nsplits : 0, &opts,
                            handle);
}

hvd_status hvdj_reducescatter_async(void* scratch, const char* name, void* input, int64_t* shape,
                                    int ndim, int dtype_code, int dtype_bits, hvd_reduce_op op,
                                    int32_t process_set, int64_t* handle) {
  scratch_layout* s = describe(scratch, input, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_reducescatter_async(name, s ? &s->input : NULL, op, &opts, handle);
}

/* Grouped scratch layout: [DLTensor t[count]][const DLTensor* p[count]]
 * [int64_t shape[count]]: one 1-D descriptor per tensor. */
int64_t hvdj_grouped_scratch_bytes(int count) {
  const size_t n = (size_t)(count > 0 ? count : 0);
  return (int64_t)(n * (sizeof(DLTensor) + sizeof(DLTensor*) + sizeof(int64_t)));
}

/* The tensor pointers of a grouped operation over consecutive tensors of
 * `data`; NULL if the arguments cannot describe them (the C API then
 * reports the error). */
static const DLTensor* const* describe_group(void* scratch, void* data, const int64_t* lengths,
                                             int count, int dtype_code, int dtype_bits) {
  if (scratch == NULL || ((uintptr_t)scratch % sizeof(int64_t)) != 0 || count <= 0 ||
      lengths == NULL) {
    return NULL;
  }
  DLTensor* t = (DLTensor*)scratch;
  const DLTensor** p = (const DLTensor**)(t + count);
  int64_t* shape = (int64_t*)(p + count);
  const size_t esize = (size_t)(dtype_bits + 7) / 8;
  size_t offset = 0;
  for (int i = 0; i < count; ++i) {
    if (lengths[i] < 0) return NULL;
    shape[i] = lengths[i];
    memset(&t[i], 0, sizeof t[i]);
    t[i].device.device_type = kDLCPU;
    t[i].ndim = 1;
    t[i].dtype.code = (uint8_t)dtype_code;
    t[i].dtype.bits = (uint8_t)dtype_bits;
    t[i].dtype.lanes = 1;
    t[i].shape = &shape[i];
    t[i].data = data;
    t[i].byte_offset = offset;
    offset += (size_t)lengths[i] * esize;
    p[i] = &t[i];
  }
  return p;
}

hvd_status hvdj_grouped_allgather_async(void* scratch, void* data, int64_t* lengths, int count,
                                        int dtype_code, int dtype_bits, int32_t process_set,
                                        int64_t* handle) {
  const DLTensor* const* in = describe_group(scratch, data, lengths, count, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_grouped_allgather_async(NULL, in, in ? count : 0, &opts, handle);
}

hvd_status hvdj_grouped_reducescatter_async(void* scratch, void* data, int64_t* lengths, int count,
                                            int dtype_code, int dtype_bits, hvd_reduce_op op,
                                            int32_t process_set, int64_t* handle) {
  const DLTensor* const* in = describe_group(scratch, data, lengths, count, dtype_code, dtype_bits);
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_grouped_reducescatter_async(NULL, in, in ? count : 0, op, &opts, handle);
}

static int64_t element_count(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int64_t byte_size(const DLTensor* t) {
  return element_count(t) * ((t->dtype.bits * t->dtype.lanes + 7) / 8);
}

hvd_status hvdj_result_shape(int64_t handle, int64_t* shape, int cap, int32_t* ndim,
                             int64_t* nbytes) {
  return hvdj_result_shape_at(handle, 0, shape, cap, ndim, nbytes);
}

hvd_status hvdj_result_copy(int64_t handle, void* dst, int64_t dst_bytes) {
  return hvdj_result_copy_at(handle, 0, dst, dst_bytes);
}

hvd_status hvdj_result_shape_at(int64_t handle, int index, int64_t* shape, int cap, int32_t* ndim,
                                int64_t* nbytes) {
  DLTensor r;
  hvd_status st = hvd_result_at(handle, index, &r);
  if (st != HVD_OK) return st;
  for (int i = 0; i < r.ndim && i < cap; ++i) shape[i] = r.shape[i];
  ndim[0] = r.ndim;
  nbytes[0] = byte_size(&r);
  return HVD_OK;
}

hvd_status hvdj_result_copy_at(int64_t handle, int index, void* dst, int64_t dst_bytes) {
  DLTensor r;
  hvd_status st = hvd_result_at(handle, index, &r);
  if (st != HVD_OK) return st;
  int64_t bytes = byte_size(&r);
  /* The Java side sizes dst from hvdj_result_shape; a mismatch is a bug there. */
  if (bytes != dst_bytes || (bytes > 0 && dst == NULL)) return HVD_ERR_INTERNAL;
  if (bytes > 0) memcpy(dst, (const char*)r.data + r.byte_offset, (size_t)bytes);
  return HVD_OK;
}

/* ---- point to point ---- */
hvd_status hvdj_send_async(void* scratch, void* data, int64_t* shape, int ndim, int dtype_code,
                           int dtype_bits, int dest, int tag, int32_t process_set,
                           int64_t* handle) {
  scratch_layout* s = describe(scratch, data, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_p2p_options opts = HVD_P2P_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_send_async(s ? &s->input : NULL, dest, tag, &opts, handle);
}

hvd_status hvdj_recv_async(void* scratch, void* data, int64_t* shape, int ndim, int dtype_code,
                           int dtype_bits, int src, int tag, int32_t process_set, int64_t* handle) {
  scratch_layout* s = describe(scratch, data, NULL, shape, ndim, dtype_code, dtype_bits);
  hvd_p2p_options opts = HVD_P2P_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_recv_async(s ? &s->input : NULL, src, tag, &opts, handle);
}

/* Batch scratch layout: [hvd_p2p_op op[count]][DLTensor t[count]][int64_t shape[count]]. */
int64_t hvdj_batch_scratch_bytes(int count) {
  const size_t n = (size_t)(count > 0 ? count : 0);
  return (int64_t)(n * (sizeof(hvd_p2p_op) + sizeof(DLTensor) + sizeof(int64_t)));
}

hvd_status hvdj_batch_set(void* scratch, int count, int index, int recv, void* data,
                          int64_t elements, int dtype_code, int dtype_bits, int peer, int tag) {
  /* The Java side sizes scratch and counts ops; a bad index is a bug there. */
  if (scratch == NULL || ((uintptr_t)scratch % sizeof(int64_t)) != 0 || index < 0 ||
      index >= count || elements < 0) {
    return HVD_ERR_INTERNAL;
  }
  hvd_p2p_op* op = (hvd_p2p_op*)scratch + index;
  DLTensor* t = (DLTensor*)((hvd_p2p_op*)scratch + count) + index;
  int64_t* shape = (int64_t*)((DLTensor*)((hvd_p2p_op*)scratch + count) + count) + index;
  *shape = elements;
  memset(t, 0, sizeof *t);
  t->data = data;
  t->device.device_type = kDLCPU;
  t->ndim = 1;
  t->dtype.code = (uint8_t)dtype_code;
  t->dtype.bits = (uint8_t)dtype_bits;
  t->dtype.lanes = 1;
  t->shape = shape;
  const hvd_p2p_op init = HVD_P2P_OP_INIT;
  *op = init;
  op->kind = recv ? HVD_P2P_RECV : HVD_P2P_SEND;
  op->tensor = t;
  op->peer = peer;
  op->tag = tag;
  return HVD_OK;
}

hvd_status hvdj_batch_isend_irecv(void* scratch, int count, int32_t process_set, int64_t* handle) {
  hvd_p2p_options opts = HVD_P2P_OPTIONS_INIT;
  opts.process_set = process_set;
  return hvd_batch_isend_irecv((const hvd_p2p_op*)scratch, count, &opts, handle);
}
/* ---- end point to point ---- */
