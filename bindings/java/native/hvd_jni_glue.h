/*
 * Glue between the Java binding and the C API: builds DLTensor descriptors
 * for contiguous CPU buffers so that Java never has to lay out C structs.
 *
 * Every *_async function takes `scratch`, caller-owned memory of at least
 * hvdj_scratch_bytes(ndim) bytes (a direct ByteBuffer on the Java side) that
 * holds the DLTensor structs and the shape. The C API only promises to read
 * tensors while the operation runs, so the descriptors must live as long as
 * the data; keeping them in a Java-owned buffer ties their lifetime to the
 * Java Handle, with no native allocation to leak.
 */
#ifndef HVD_JNI_GLUE_H
#define HVD_JNI_GLUE_H

#include <hvd/hvd.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of scratch one operation needs for tensors of `ndim` dimensions. */
int64_t hvdj_scratch_bytes(int ndim);

hvd_status hvdj_allreduce_async(void* scratch, const char* name, void* input, void* output,
                                int64_t* shape, int ndim, int dtype_code, int dtype_bits,
                                hvd_reduce_op op, double prescale, double postscale,
                                int32_t process_set, int64_t* handle);

hvd_status hvdj_allgather_async(void* scratch, const char* name, void* input, int64_t* shape,
                                int ndim, int dtype_code, int dtype_bits, int32_t process_set,
                                int64_t* handle);

hvd_status hvdj_broadcast_async(void* scratch, const char* name, void* data, int64_t* shape,
                                int ndim, int dtype_code, int dtype_bits, int root_rank,
                                int32_t process_set, int64_t* handle);

/* splits may be NULL (equal splits); nsplits is then ignored. */
hvd_status hvdj_alltoall_async(void* scratch, const char* name, void* input, int64_t* shape,
                               int ndim, int dtype_code, int dtype_bits, int32_t* splits,
                               int nsplits, int32_t process_set, int64_t* handle);

hvd_status hvdj_reducescatter_async(void* scratch, const char* name, void* input, int64_t* shape,
                                    int ndim, int dtype_code, int dtype_bits, hvd_reduce_op op,
                                    int32_t process_set, int64_t* handle);

/* Grouped allgather/reducescatter of `count` 1-D tensors of one dtype laid
 * out one after another in `data` (lengths[i] elements each). `scratch`
 * holds hvdj_grouped_scratch_bytes(count) bytes; result i is read with
 * hvdj_result_shape_at/hvdj_result_copy_at. */
int64_t hvdj_grouped_scratch_bytes(int count);

hvd_status hvdj_grouped_allgather_async(void* scratch, void* data, int64_t* lengths, int count,
                                        int dtype_code, int dtype_bits, int32_t process_set,
                                        int64_t* handle);

hvd_status hvdj_grouped_reducescatter_async(void* scratch, void* data, int64_t* lengths, int count,
                                            int dtype_code, int dtype_bits, hvd_reduce_op op,
                                            int32_t process_set, int64_t* handle);

/* hvdj_result_shape/hvdj_result_copy for result `index` of a grouped operation. */
hvd_status hvdj_result_shape_at(int64_t handle, int index, int64_t* shape, int cap, int32_t* ndim,
                                int64_t* nbytes);
hvd_status hvdj_result_copy_at(int64_t handle, int index, void* dst, int64_t dst_bytes);

/* The hvd-owned result of a finished operation: its shape (up to `cap`
 * dimensions; ndim[0] receives the real count) and its size in bytes. */
hvd_status hvdj_result_shape(int64_t handle, int64_t* shape, int cap, int32_t* ndim,
                             int64_t* nbytes);

/* Copy the result into `dst`, which must hold exactly its byte size. */
hvd_status hvdj_result_copy(int64_t handle, void* dst, int64_t dst_bytes);

/* ---- point to point: send `data` to / receive it from a rank of the set ---- */
hvd_status hvdj_send_async(void* scratch, void* data, int64_t* shape, int ndim, int dtype_code,
                           int dtype_bits, int dest, int tag, int32_t process_set, int64_t* handle);
hvd_status hvdj_recv_async(void* scratch, void* data, int64_t* shape, int ndim, int dtype_code,
                           int dtype_bits, int src, int tag, int32_t process_set, int64_t* handle);

/* Batched point to point (hvd_batch_isend_irecv): fill `count` ops of
 * `scratch` (hvdj_batch_scratch_bytes(count) bytes) with hvdj_batch_set, each
 * a 1-D tensor of `elements` elements over `data` (recv 0: send, 1: receive),
 * then post them in index order under one handle. */
int64_t hvdj_batch_scratch_bytes(int count);
hvd_status hvdj_batch_set(void* scratch, int count, int index, int recv, void* data,
                          int64_t elements, int dtype_code, int dtype_bits, int peer, int tag);
hvd_status hvdj_batch_isend_irecv(void* scratch, int count, int32_t process_set, int64_t* handle);
/* ---- end point to point ---- */

#ifdef __cplusplus
}
#endif

#endif /* HVD_JNI_GLUE_H */
