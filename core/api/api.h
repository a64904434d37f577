// hvd's C++ API: what the C layer (capi/) offers, in C++ types. Every
// function validates its arguments and returns a Status whose message names
// what is wrong; the C layer converts C types to these, calls one function
// and turns the Status into an hvd_status and the last error (prefixed with
// the C function's name). Nothing here exposes the runtime's internals.
//
// Operations are asynchronous: they return a handle (an id) that Poll, Wait
// and Result take, and that Release frees. Names: an empty name asks for an
// automatic one ("allreduce.noname.7"), equal on all ranks as long as they
// make such calls in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {
namespace api {

// A view of `size` elements the caller owns (C++17 has no std::span).
template <typename T>
struct Span {
  const T* data = nullptr;
  size_t size = 0;
  const T* begin() const { return data; }
  const T* end() const { return data + size; }
  const T& operator[](size_t i) const { return data[i]; }
};

// A dense, row-major tensor the caller owns.
struct Tensor {
  DataType dtype = DataType::kFloat32;
  Device device;
  const int64_t* shape = nullptr;  // ndim entries
  int ndim = 0;
  int64_t num_elements = 0;  // the product of shape
  void* data = nullptr;
};

// ----------------------------------------------------------- init and topology
enum class Backend { kAuto, kMpi, kGloo };

struct InitOptions {
  Backend controller = Backend::kAuto;
  Backend cpu_operations = Backend::kAuto;
  bool use_mpi_comm = false;  // mpi_comm: the caller's communicator (a Fortran handle)
  int mpi_comm = 0;
};

struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool homogeneous = true;  // every host runs the same number of ranks
};

Status Init(const InitOptions& options);  // init.cc
Status Shutdown();
bool Initialized();
// kNotInitialized ("hvd is not initialized (call hvd_init first)") unless Init succeeded.
Status CheckInitialized();
Status GetTopology(Topology* out);  // kNotInitialized before Init
// Whether the controller or the CPU-operations backend is MPI (Gloo).
bool MpiEnabled();
bool GlooEnabled();
// MPI is the controller and runs with MPI_THREAD_MULTIPLE.
bool MpiThreadsSupported();
bool BackendBuilt(Backend backend);
bool CudaBuilt();
int NcclVersionCode();  // 0 without NCCL

// ------------------------------------------------------------------ collectives
// hvd's status for a handle and the handle's id (callbacks run on hvd's
// background thread once the operation is done).
using Callback = std::function<void(int64_t handle, const Status& status)>;
// Memory for a result hvd would otherwise allocate: (bytes, shape, dtype,
// device) -> pointer, or null when it cannot (hvd then allocates it).
using Allocator =
    std::function<void*(size_t, const std::vector<int64_t>&, DataType, const Device&)>;

struct OpOptions {
  int32_t process_set = 0;
  double prescale = 1.0;  // finite; allreduce and reducescatter scale by these
  double postscale = 1.0;
  Allocator allocator;  // results of allgather, alltoall, reducescatter
  Callback callback;
  void* cuda_stream = nullptr;  // GPU tensors: the stream the caller's work is on
};

// One tensor of a grouped operation; `output` is used by allreduce only.
struct GroupItem {
  std::string_view name;
  Tensor input;
  Tensor output;
};

// Allreduce into `output` (same dtype and element count as `input`; may be
// `input`). Bool tensors reduce logically (sum, max: or; min, product: and).
// Adasum: floating-point CPU tensors, any number of ranks.
struct AllreduceArgs {
  std::string_view name;
  Tensor input;
  Tensor output;
  ReduceOp op = ReduceOp::kSum;
};
Status Allreduce(const AllreduceArgs& args, const OpOptions& options,
                 int64_t* handle);  // allreduce.cc
// All of `items` run together under one handle (negotiated and fused as one).
Status GroupedAllreduce(Span<GroupItem> items, ReduceOp op, const OpOptions& options,
                        int64_t* handle);

// Concatenates every rank's tensor along dimension 0 (allgather.cc). The
// grouped form gives each item a result of its own (Result's index).
Status Allgather(std::string_view name, const Tensor& input, const OpOptions& options,
                 int64_t* handle);
Status GroupedAllgather(Span<GroupItem> items, const OpOptions& options, int64_t* handle);

// Reduces (sum or average) and scatters blocks of dimension 0 (reducescatter.cc).
Status Reducescatter(std::string_view name, const Tensor& input, ReduceOp op,
                     const OpOptions& options, int64_t* handle);
Status GroupedReducescatter(Span<GroupItem> items, ReduceOp op, const OpOptions& options,
                            int64_t* handle);

// Root's tensor into every rank's `tensor`, in place (broadcast.cc).
Status Broadcast(std::string_view name, const Tensor& tensor, int root_rank,
                 const OpOptions& options, int64_t* handle);

// Rows of dimension 0 to each rank: splits[r] rows to rank r of the set, or
// (splits.data null) equal parts (alltoall.cc).
Status Alltoall(std::string_view name, const Tensor& input, Span<int32_t> splits,
                const OpOptions& options, int64_t* handle);

// ------------------------------------------------- blocking control operations
// control.cc: each runs to completion on the members of the set.
Status Barrier(int32_t process_set);
Status Join(int32_t process_set, int* last_rank);  // last_rank may be null
Status AddProcessSet(Span<int32_t> ranks, int32_t* id);
Status RemoveProcessSet(int32_t id);
// This rank's rank in set `id` (-1 when not a member) and its size.
Status ProcessSetInfo(int32_t id, int* rank, int* size);

// ------------------------------------------------------------- point to point
// p2p.cc. Messages bypass negotiation; `peer` is a rank of the set.
struct P2PMessage {
  bool recv = false;
  void* data = nullptr;  // host memory
  int64_t bytes = 0;
  int peer = 0;
  int tag = 0;
};
struct P2POptions {
  int32_t process_set = 0;
  Callback callback;
};
// `caller` names the call in the messages of operations that fail later (a
// string that outlives them: a literal).
Status PostP2P(const char* caller, std::vector<P2PMessage> messages, const P2POptions& options,
               int64_t* handle);

// -------------------------------------------------------------------- handles
// handles.cc. *call_failed tells a Status about the call (unknown handle,
// the wait timed out, not finished, bad index) from the operation's own.
Status Poll(int64_t handle, bool* call_failed);
Status Wait(int64_t handle, int64_t timeout_ms, bool* call_failed);  // < 0: forever
Status Release(int64_t handle);

// An hvd-allocated result, valid until the handle is released.
struct ResultView {
  void* data = nullptr;
  int64_t* shape = nullptr;
  int ndim = 0;
  DataType dtype = DataType::kFloat32;
  Device device;
};
Status Result(int64_t handle, int index, ResultView* out, bool* call_failed);
// An alltoall's rows received from each rank, valid until Release.
Status ResultSplits(int64_t handle, Span<int32_t>* out, bool* call_failed);

// ------------------------------------------------------------- shared memory
// shared_memory.cc. Host buffers the other ranks of this host can map
// (allreduces of tensors in them skip the shared-memory slots); callable at
// any time, before Init and after Shutdown too.
Status AllocShared(int64_t bytes, void** out);
Status FreeShared(void* p);

// -------------------------------------------------------------- observability
// observability.cc.
struct Stats {
  uint64_t allreduced_bytes = 0;
  uint64_t host_bytes_moved = 0;
  uint64_t host_allreduces = 0;
  uint64_t shm_chosen_calls = 0;
  uint64_t shm_streamed_calls = 0;
  uint64_t shm_mapped_calls = 0;
  uint64_t shm_backend_calls = 0;
  uint64_t shm_peer_read_calls = 0;
  uint64_t waits = 0;
  uint64_t wait_ns = 0;
  uint64_t wait_negotiating_ns = 0;
};
Stats GetStats();  // at any time
Status StartTimeline(const std::string& path, bool mark_cycles);
Status StopTimeline();
// `path` empty: HVD_FLIGHT_RECORDER_DIR/hvd_flight.rank<N>.json.
Status DumpFlightRecord(const std::string& path, const std::string& reason);

// -------------------------------------------------------------------- elastic
// elastic.cc. Callable before Init (the environment's settings then).
bool ElasticEnabled();
int64_t ElasticRound();
// kNotInitialized when this worker has not joined a round.
Status ElasticHostsUpdated(bool* updated);

}  // namespace api
}  // namespace hvd
