/*
 * hvd — collectives for data-parallel deep learning, behind one stable C ABI.
 *
 * Conventions (the whole header follows them):
 *  - Every function returns an hvd_status except pure queries. HVD_OK is 0,
 *    HVD_IN_PROGRESS is positive, errors are negative. After an error,
 *    hvd_last_error() returns a one-line message for the calling thread
 *    (it is kept until the next error, like errno).
 *  - Parameters: the object acted on first (a handle, a tensor), outputs
 *    last (the handle of an *_async call, the id of a new process set).
 *  - Tensors are DLPack DLTensor structs (dlpack/dlpack.h). hvd never takes
 *    ownership of caller memory; input and output must stay valid until the
 *    operation completes (hvd_poll/hvd_wait returns something other than
 *    HVD_IN_PROGRESS, or the callback has run).
 *  - Option structs begin with struct_size and only grow at the end; always
 *    initialise them with the matching *_INIT macro (or *_init function) so
 *    that a binary built against an older header keeps working.
 *  - Handles are opaque 64-bit integers that are never reused inside a
 *    process. A stale, released or unknown handle is HVD_ERR_INVALID_ARGUMENT.
 *  - Thread safety: every function may be called from any thread.
 */
#ifndef HVD_HVD_H
#define HVD_HVD_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported while building libhvd (HVD_BUILDING, set by its build only);
 * imported (Windows) or plain declarations for everyone who uses it. */
#if defined(_WIN32)
#ifdef HVD_BUILDING
#define HVD_API __declspec(dllexport)
#else
#define HVD_API __declspec(dllimport)
#endif
#elif defined(HVD_BUILDING)
#define HVD_API __attribute__((visibility("default")))
#else
#define HVD_API
#endif

/* ABI version: the SONAME carries HVD_VERSION_MAJOR. */
#define HVD_VERSION_MAJOR 1
#define HVD_VERSION_MINOR 0
#define HVD_VERSION_PATCH 0

/* ------------------------------------------------------------------ status */

typedef enum hvd_status {
  HVD_OK = 0,
  HVD_IN_PROGRESS = 1,              /* operation still running (hvd_poll) */
  HVD_ERR_NOT_INITIALIZED = -1,     /* hvd_init has not been called */
  HVD_ERR_INVALID_ARGUMENT = -2,    /* null pointer, bad dtype, bad handle... */
  HVD_ERR_MISMATCH = -3,            /* ranks disagree on shape/dtype/op/root */
  HVD_ERR_SHUT_DOWN = -4,           /* hvd was (or is being) shut down */
  HVD_ERR_BACKEND = -5,             /* MPI/Gloo/NCCL reported an error */
  HVD_ERR_PEER_LOST = -6,           /* another rank died or disconnected */
  HVD_ERR_TIMEOUT = -7,             /* a wait or a peer exceeded its timeout */
  HVD_ERR_UNSUPPORTED = -8,         /* not available in this build/backend */
  HVD_ERR_INTERNAL = -9,            /* a bug in hvd; please report it */
  HVD_ERR_ALREADY_INITIALIZED = -10 /* hvd_init called twice */
} hvd_status;

/* Static string naming a status ("HVD_ERR_MISMATCH: ..."); never NULL. */
HVD_API const char* hvd_status_string(hvd_status status);

/* The message of the last failed call on this thread ("" if none yet).
 * Successful calls do not clear it; valid until the next failing call. */
HVD_API const char* hvd_last_error(void);

/* "1.0.0" */
HVD_API const char* hvd_version(void);

/* ------------------------------------------------------------------- init */

typedef enum hvd_backend {
  HVD_BACKEND_AUTO = 0, /* MPI when launched by mpirun and built, else Gloo */
  HVD_BACKEND_MPI = 1,
  HVD_BACKEND_GLOO = 2
} hvd_backend;

typedef struct hvd_init_options {
  size_t struct_size;         /* sizeof(hvd_init_options) */
  hvd_backend controller;     /* negotiation backend; overrides HVD_CONTROLLER */
  hvd_backend cpu_operations; /* CPU data backend; overrides HVD_CPU_OPERATIONS */
  int use_mpi_comm;           /* non-zero: run on mpi_comm instead of MPI_COMM_WORLD */
  int mpi_comm;               /* Fortran handle (MPI_Comm_c2f, mpi4py comm.py2f()) */
} hvd_init_options;

#define HVD_INIT_OPTIONS_INIT \
  { sizeof(hvd_init_options), HVD_BACKEND_AUTO, HVD_BACKEND_AUTO, 0, 0 }

/* Fill *opts with the defaults, as HVD_INIT_OPTIONS_INIT does. */
HVD_API void hvd_init_options_init(hvd_init_options* opts);

/* Start hvd with the configuration from HVD_* (or HOROVOD_*) variables.
 * Collective: every rank of the job must call it. */
HVD_API hvd_status hvd_init(void);
/* hvd_init with the backends chosen in opts (they override HVD_CONTROLLER
 * and HVD_CPU_OPERATIONS), or on an MPI communicator the caller owns. */
HVD_API hvd_status hvd_init_with(const hvd_init_options* opts);
/* Run on a communicator the caller owns (Fortran handle). The caller keeps
 * ownership and must not free it before hvd_shutdown. */
HVD_API hvd_status hvd_init_mpi_comm(int fortran_comm);

/* Finish pending work with HVD_ERR_SHUT_DOWN, stop the background thread,
 * release backends. hvd_init may be called again afterwards. */
HVD_API hvd_status hvd_shutdown(void);

/* 1 between a successful hvd_init and hvd_shutdown, else 0. */
HVD_API int hvd_is_initialized(void);

/* Topology queries: -1 when not initialised (hvd_last_error says why). */
HVD_API int hvd_rank(void);
HVD_API int hvd_size(void);
HVD_API int hvd_local_rank(void);
HVD_API int hvd_local_size(void);
HVD_API int hvd_cross_rank(void);
HVD_API int hvd_cross_size(void);
/* 1 when every host runs the same number of ranks, else 0 (-1 when not
 * initialised). Hosts are told apart as for hvd_local_size. */
HVD_API int hvd_is_homogeneous(void);

/* Build and run-time facts: 1 yes, 0 no. */
HVD_API int hvd_mpi_threads_supported(void);
HVD_API int hvd_mpi_enabled(void);  /* MPI in use by this job */
HVD_API int hvd_gloo_enabled(void); /* Gloo in use by this job */
HVD_API int hvd_mpi_built(void);
HVD_API int hvd_gloo_built(void);
HVD_API int hvd_nccl_built(void); /* NCCL_VERSION_CODE (e.g. 22809), 0: no NCCL */
HVD_API int hvd_cuda_built(void);

/* -------------------------------------------------------------- operations */

typedef int64_t hvd_handle;

typedef enum hvd_reduce_op {
  HVD_OP_SUM = 0,
  HVD_OP_AVERAGE = 1,
  HVD_OP_MIN = 2,
  HVD_OP_MAX = 3,
  HVD_OP_PRODUCT = 4,
  /* Adaptive summation (Maleki et al. 2020, Horovod's Adasum): allreduce of
   * float16/bfloat16/float32/float64 CPU tensors over any number of ranks
   * (Horovod: powers of two only); each tensor is combined pairwise, a + b
   * scaled by how much the two point the same way (orthogonal: a + b;
   * equal: a; parallel on every rank: their mean). */
  HVD_OP_ADASUM = 5
} hvd_reduce_op;

/* Called once when an operation finishes (successfully or not), from hvd's
 * background thread or from a thread waiting in hvd_wait on the same process
 * set (which does the set's work itself). It must not block; it may call
 * hvd_poll/hvd_release on its own handle. */
typedef void (*hvd_callback)(hvd_handle handle, hvd_status status, void* user_data);

/* Allocates the result of an operation whose output size is known only after
 * negotiation (allgather, alltoall). Return a pointer to `bytes` bytes of
 * memory on `device` that stays valid until the caller frees it, or NULL to
 * fail the operation. Called where callbacks are (hvd_callback). */
typedef void* (*hvd_allocator)(size_t bytes, const int64_t* shape, int ndim, DLDataType dtype,
                               DLDevice device, void* user_data);

typedef struct hvd_op_options {
  size_t struct_size;      /* sizeof(hvd_op_options) */
  double prescale_factor;  /* multiply inputs before reducing (default 1) */
  double postscale_factor; /* multiply result after reducing (default 1) */
  int32_t process_set;     /* 0 = all ranks */
  hvd_callback callback;   /* optional completion callback */
  void* callback_user_data;
  hvd_allocator allocator; /* optional, for allgather/alltoall outputs */
  void* allocator_user_data;
  void* cuda_stream; /* cudaStream_t the input is produced on, or NULL */
} hvd_op_options;

#define HVD_OP_OPTIONS_INIT \
  { sizeof(hvd_op_options), 1.0, 1.0, 0, NULL, NULL, NULL, NULL, NULL }

/* Fill *opts with the defaults, as HVD_OP_OPTIONS_INIT does. */
HVD_API void hvd_op_options_init(hvd_op_options* opts);

/* All *_async functions: `name` identifies the tensor across ranks (every
 * rank must use the same name for the same collective; NULL gives an
 * automatic name that matches only if all ranks submit in the same order).
 * `opts` may be NULL for defaults. On success *handle receives a handle that
 * must be released with hvd_release. Supported dtypes: uint8, int8, int16,
 * int32, int64, float16, bfloat16, float32, float64 and bool (DLPack code 6,
 * 8 bits; sum and max reduce it as logical or, min and product as logical
 * and; no average or scaling). NCCL cannot reduce int16 CUDA tensors.
 * Tensors must be contiguous (strides NULL or compact row-major). */

/* Reduce `input` across ranks into `output` (same shape and dtype; may be the
 * same tensor for an in-place reduction). */
HVD_API hvd_status hvd_allreduce_async(const char* name, const DLTensor* input, DLTensor* output,
                                       hvd_reduce_op op, const hvd_op_options* opts,
                                       hvd_handle* handle);

/* Reduce `count` tensors as one group: they are negotiated and executed
 * together and complete together under one handle. names may be NULL. */
HVD_API hvd_status hvd_grouped_allreduce_async(const char* const* names,
                                               const DLTensor* const* inputs,
                                               DLTensor* const* outputs, int count,
                                               hvd_reduce_op op, const hvd_op_options* opts,
                                               hvd_handle* handle);

/* Concatenate every rank's `input` along dimension 0 (which may differ per
 * rank; the other dimensions must match). The result is read with
 * hvd_result, or written to memory from opts->allocator. */
HVD_API hvd_status hvd_allgather_async(const char* name, const DLTensor* input,
                                       const hvd_op_options* opts, hvd_handle* handle);

/* Copy root's `tensor` into `tensor` on every other rank, in place. */
HVD_API hvd_status hvd_broadcast_async(const char* name, DLTensor* tensor, int root_rank,
                                       const hvd_op_options* opts, hvd_handle* handle);

/* Send splits[i] rows (dimension 0) of `input` to rank i, in rank order;
 * splits NULL means equal splits (dim 0 divisible by the set's size). The
 * received rows (rank order) are read with hvd_result, and how many came from
 * each rank with hvd_result_splits. */
HVD_API hvd_status hvd_alltoall_async(const char* name, const DLTensor* input,
                                      const int32_t* splits, int nsplits,
                                      const hvd_op_options* opts, hvd_handle* handle);

/* Reduce `input` across ranks and leave rank r its part of dimension 0:
 * n / size rows, the first n % size ranks one more. op is SUM or AVERAGE.
 * The result is read with hvd_result (or written through opts->allocator). */
HVD_API hvd_status hvd_reducescatter_async(const char* name, const DLTensor* input,
                                           hvd_reduce_op op, const hvd_op_options* opts,
                                           hvd_handle* handle);

/* Grouped allgather and reducescatter: `count` tensors (names may be NULL)
 * negotiated as one group, executed together (fused where dtypes match) and
 * completed under one handle. Each has its own result: read result i with
 * hvd_result_at(handle, i, ...), or have opts->allocator allocate it. Each
 * tensor follows the single-tensor rules (allgather: dimension 0 may differ
 * per rank; reducescatter: op SUM or AVERAGE, at least one dimension). */
HVD_API hvd_status hvd_grouped_allgather_async(const char* const* names,
                                               const DLTensor* const* inputs, int count,
                                               const hvd_op_options* opts, hvd_handle* handle);
HVD_API hvd_status hvd_grouped_reducescatter_async(const char* const* names,
                                                   const DLTensor* const* inputs, int count,
                                                   hvd_reduce_op op, const hvd_op_options* opts,
                                                   hvd_handle* handle);
/* ---------------------------------------------------------- point to point */
/* Messages between two ranks, outside the negotiation of collectives: a
 * send on one rank completes with the matching receive on the other (same
 * process set, tag, and number of bytes). Messages from one rank to another
 * on one tag arrive in the order they were sent. Tensors are CPU tensors on
 * MPI (MPI_THREAD_MULTIPLE) or Gloo; the operation deadline
 * (HVD_OP_TIMEOUT_SECONDS) applies, and errors name the peer. Completion is
 * through the handle (hvd_poll/hvd_wait/hvd_release), as for collectives. */

typedef struct hvd_p2p_options {
  size_t struct_size;       /* sizeof(hvd_p2p_options) */
  int32_t process_set;      /* peers are ranks of this set; 0 = all ranks */
  hvd_callback callback;    /* optional; runs on hvd's p2p thread or on a thread */
  void* callback_user_data; /* waiting in hvd_wait for this or another message */
} hvd_p2p_options;

#define HVD_P2P_OPTIONS_INIT \
  { sizeof(hvd_p2p_options), 0, NULL, NULL }

/* Sets *opts to HVD_P2P_OPTIONS_INIT (for bindings that cannot use macros). */
HVD_API void hvd_p2p_options_init(hvd_p2p_options* opts);

/* Tags: 0 .. HVD_P2P_MAX_TAG. */
#define HVD_P2P_MAX_TAG 1048575

/* Send `tensor` (its bytes, dtype and shape are the receiver's business) to
 * rank `dest` of the set. `opts` may be NULL. */
HVD_API hvd_status hvd_send_async(const DLTensor* tensor, int dest, int tag,
                                  const hvd_p2p_options* opts, hvd_handle* handle);

/* Receive into `tensor` from rank `src` of the set. The message must have
 * exactly the tensor's byte size (else HVD_ERR_MISMATCH naming both sizes). */
HVD_API hvd_status hvd_recv_async(DLTensor* tensor, int src, int tag, const hvd_p2p_options* opts,
                                  hvd_handle* handle);

typedef enum hvd_p2p_kind { HVD_P2P_SEND = 0, HVD_P2P_RECV = 1 } hvd_p2p_kind;

/* One message of a batch. In an array, every element has the struct_size
 * of the first (the caller's sizeof). */
typedef struct hvd_p2p_op {
  size_t struct_size; /* sizeof(hvd_p2p_op) */
  hvd_p2p_kind kind;
  DLTensor* tensor; /* read (send) or written (receive) */
  int peer;         /* rank of the set */
  int tag;
} hvd_p2p_op;

#define HVD_P2P_OP_INIT \
  { sizeof(hvd_p2p_op), HVD_P2P_SEND, NULL, -1, 0 }

/* Post `count` sends and receives in array order under one handle, done
 * when all are (the first error wins). Every op is checked before any is
 * posted. */
HVD_API hvd_status hvd_batch_isend_irecv(const hvd_p2p_op* ops, int count,
                                         const hvd_p2p_options* opts, hvd_handle* handle);

/* ------------------------------------------------------- handles & results */

/* HVD_OK, HVD_IN_PROGRESS or the operation's error (message: hvd_last_error). */
HVD_API hvd_status hvd_poll(hvd_handle handle);

/* Block until done or timeout_ms passes (negative: no limit). Returns the
 * operation's status, or HVD_ERR_TIMEOUT (the operation keeps running).
 * For up to HVD_WAIT_SPIN_US after its last useful step it keeps the core,
 * doing its process set's negotiation and collectives itself
 * (HVD_WAIT_PROGRESS), before it sleeps (docs/tuning.md). */
HVD_API hvd_status hvd_wait(hvd_handle handle, int64_t timeout_ms);

/* Forget a handle. Releasing a running operation is allowed: it completes in
 * the background and its result is discarded. Releasing twice is an error. */
HVD_API hvd_status hvd_release(hvd_handle handle);

/* View of an operation's hvd-owned result (allgather, alltoall,
 * reducescatter without allocator): data, shape and dtype stay valid until
 * hvd_release. *result is filled in; strides is NULL (compact). */
HVD_API hvd_status hvd_result(hvd_handle handle, DLTensor* result);

/* Result `index` of a grouped allgather/reducescatter (0 <= index < count);
 * hvd_result(h, r) is hvd_result_at(h, 0, r). Valid until hvd_release. */
HVD_API hvd_status hvd_result_at(hvd_handle handle, int index, DLTensor* result);

/* For alltoall: rows received from each rank. `splits` has room for `n`
 * entries (the set's size); *count receives the set's size. */
HVD_API hvd_status hvd_result_splits(hvd_handle handle, int32_t* splits, int n, int* count);

/* ------------------------------------------------ synchronisation and sets */

/* Block until every rank of the process set reaches the barrier. */
HVD_API hvd_status hvd_barrier(int32_t process_set);

/* Declare that this rank has no more data: until every rank has joined, it
 * contributes zeros to allreduces of others. Blocks until all ranks joined;
 * *last_rank receives the rank that joined last (may be NULL). */
HVD_API hvd_status hvd_join(int32_t process_set, int* last_rank);

/* Collective over all ranks: create a set of `n` distinct ranks (sorted or
 * not); *id receives its id (> 0), the same on every rank. */
HVD_API hvd_status hvd_add_process_set(const int32_t* ranks, int n, int32_t* id);
/* Collective over all ranks. */
HVD_API hvd_status hvd_remove_process_set(int32_t id);
/* This rank's rank inside the set; -1 if not a member or unknown id. */
HVD_API int hvd_process_set_rank(int32_t id);
/* The number of ranks in the set; -1 for an unknown id. */
HVD_API int hvd_process_set_size(int32_t id);
/* 1 when this rank is a member of the set, else 0 (also for an unknown id). */
HVD_API int hvd_process_set_included(int32_t id);

/* ---------------------------------------------------------------- timeline */

/* Start writing a Chrome-trace timeline to `path` (rank 0 writes; on other
 * ranks this is accepted and does nothing). */
HVD_API hvd_status hvd_start_timeline(const char* path, int mark_cycles);
/* Stop writing the timeline and close its file. */
HVD_API hvd_status hvd_stop_timeline(void);

/* ---------------------------------------------------------- shared memory */

/* `bytes` (> 0) of zero-filled, page-aligned host memory that the other
 * ranks on this host can map: a POSIX shared-memory object in /dev/shm
 * (hvd-buf.PID.N) kept until hvd_free_shared, or, if the process dies
 * first, removed by the next process on the host that allocates. An
 * allreduce whose tensors lie in such memory on every rank (inputs and
 * outputs, in place or not; host tensors, no prescale, all ranks on one
 * host) reduces straight between the ranks' buffers instead of through
 * hvd's shared-memory slots: each byte is read once and written once
 * (docs/tuning.md, "Shared buffers"). Callable at any time, also before
 * hvd_init and after hvd_shutdown. */
HVD_API hvd_status hvd_alloc_shared(int64_t bytes, void** ptr);
/* Frees memory from hvd_alloc_shared (NULL: nothing to do); not while an
 * operation on it is in flight. Any other pointer: HVD_ERR_INVALID_ARGUMENT. */
HVD_API hvd_status hvd_free_shared(void* ptr);

/* ------------------------------------------------------------- statistics */

/* Counters of this process since it first loaded hvd (not reset by init). */
typedef struct hvd_stats {
  size_t struct_size;           /* sizeof(hvd_stats), set by the caller */
  uint64_t allreduced_bytes;    /* bytes of host tensors allreduced */
  uint64_t host_bytes_moved;    /* bytes hvd read and wrote in host memory for
                                   them: packing, reductions, scaling and
                                   shared-memory copies (not a transport's
                                   own copies inside MPI or Gloo) */
  uint64_t host_allreduces;     /* host allreduce collectives that carried
                                   them: a fused batch counts once */
  uint64_t shm_chosen_calls;    /* host-local shared-memory collectives of
                                   256 KiB or more, where each rank chooses
                                   plain or streaming stores for what the
                                   others read (docs/tuning.md) */
  uint64_t shm_streamed_calls;  /* of those, written with streaming stores */
  uint64_t shm_mapped_calls;    /* host-local allreduces whose tensors lay in
                                   hvd_alloc_shared buffers on every rank:
                                   reduced between those buffers, 2 bytes
                                   through memory per byte instead of 4 */
  uint64_t waits;               /* hvd_wait calls on a collective that had not
                                   finished (with a timeout other than 0) */
  uint64_t wait_ns;             /* nanoseconds those calls blocked */
  uint64_t wait_negotiating_ns; /* of wait_ns, the part before the collective
                                   started: some rank had not submitted it
                                   yet. wait_ns - wait_negotiating_ns is
                                   data movement the caller did not hide
                                   behind its own work */
  uint64_t shm_backend_calls;   /* host-local allreduces of 2 MiB or more that
                                   took MPI's own allreduce: tried, or timed
                                   faster than the segment at the time
                                   (HVD_SHARED_MEMORY_MPI_ALLREDUCE=1) */
  uint64_t shm_peer_read_calls; /* host-local allreduces of 1 MiB or more that
                                   read the other ranks' tensors where they
                                   lie (process_vm_readv) instead of going
                                   through the segment: tried, or timed
                                   faster at the time
                                   (HVD_SHARED_MEMORY_PEER_READS) */
} hvd_stats;

/* Fills *stats (up to its struct_size); callable at any time, even before
 * hvd_init. host_bytes_moved / allreduced_bytes is what each allreduced byte
 * costs in memory traffic; host_allreduces per training step, how many
 * collectives tensor fusion made of the step's tensors. Across a training
 * step, wait_ns - wait_negotiating_ns is the communication not hidden behind
 * backward; wait_negotiating_ns, the time this rank waited for slower ones. */
HVD_API hvd_status hvd_get_stats(hvd_stats* stats);

/* ---------------------------------------------------------------- flight recorder */
/* Writes this rank's flight record (its last HVD_FLIGHT_RECORDER_SIZE
 * operations and the stage each reached, docs/fault-tolerance.md) as JSON to
 * `path`, or, when NULL, to HVD_FLIGHT_RECORDER_DIR/hvd_flight.rankN.json (N: the rank)
 * (default directory /tmp). Local (not collective); valid after hvd_shutdown.
 * tools/hvd_flight compares the ranks' files. */
HVD_API hvd_status hvd_dump_flight_record(const char* path);

/* ---------------------------------------------------------------- elastic */
/* Elastic training (docs/elastic.md): under `hvdrun --min-np A --max-np B
 * --host-discovery-script S` (or --elastic) each worker has HVD_ELASTIC=1 and
 * a stable HVD_WORKER_ID. hvd_init then takes rank and size from the
 * launcher's newest *round* (waiting for it), and hvd_shutdown + hvd_init
 * joins the next round after workers were lost or added. */

/* 1 when this process runs as an elastic worker (HVD_ELASTIC=1), else 0. */
HVD_API int hvd_elastic_enabled(void);

/* The round this worker joined at its last successful hvd_init; -1 before
 * the first one (or outside elastic mode). */
HVD_API int64_t hvd_elastic_round(void);

/* *updated = 1 when the launcher has published a round newer than the one
 * this worker joined (hosts or workers were added or lost): the worker should
 * reach a consistent point, hvd_shutdown and hvd_init to join it. Asks the
 * rendezvous store, so call it once per commit, not per tensor. Outside
 * elastic mode *updated = 0 and HVD_OK. HVD_ERR_NOT_INITIALIZED when no
 * round was joined yet. */
HVD_API hvd_status hvd_elastic_hosts_updated(int* updated);

#ifdef __cplusplus
}
#endif

#endif /* HVD_HVD_H */
