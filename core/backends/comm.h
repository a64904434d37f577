// The interface every communication backend implements (MPI, Gloo, NCCL):
// the data collectives of one group of ranks (the world or a process set).
// Negotiation does not use them: it talks over a ControlChannel, which host
// backends open with OpenControlChannel. Buffers are host memory unless the
// backend says it supports devices. Calls are made from one thread at a
// time per Comm (the set's background thread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backends/control_channel.h"
#include "core/backends/p2p_request.h"
#include "core/backends/transport.h"
#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

// Consecutive elements of a direct allreduce (AllreduceOptions::regions):
// n elements read from `in` (0: zeros, a joined rank's part) and written to
// `out`; in may equal out. Addresses, so that other processes can read them.
struct DirectRegion {
  uint64_t in;
  uint64_t out;
  int64_t n;
};

// One allreduce: what Comm::Allreduce takes, as Gloo's AllreduceOptions
// (not api::AllreduceArgs, the C++ API's tensors). Elements [0, count) of `in` are reduced into
// `out` (in place where in == out; otherwise host memory, not overlapping); op is kSum, kMin, kMax
// or kProduct (averaging is a scale applied by the caller).
struct AllreduceOptions {
  // Work on elements [off, off + n): fill writes them into `in` before they
  // are read, drain reads them from `out` once they are final (packing and
  // unpacking the fusion buffer, scaling). Ascending, every element once;
  // host memory only.
  using Stage = std::function<Status(int64_t off, int64_t n)>;
  // Elements [off, off + n) of the input, written to dst (gather), or the
  // final elements, read from src (scatter), in any order, each element
  // once: the caller's tensors packed and unpacked by the transport itself,
  // straight into and out of its own buffers (only where caps().gathers;
  // then in and out are unused).
  using Gather = std::function<Status(int64_t off, int64_t n, void* dst)>;
  using Scatter = std::function<Status(int64_t off, int64_t n, const void* src)>;

  AllreduceOptions() = default;
  AllreduceOptions(void* buf, int64_t n, DataType type, ReduceOp reduce)
      : AllreduceOptions(buf, buf, n, type, reduce) {}
  AllreduceOptions(const void* input, void* output, int64_t n, DataType type, ReduceOp reduce)
      : in(input), out(output), count(n), dt(type), op(reduce) {}

  bool staged() const { return fill || drain; }
  bool gathered() const { return gather || scatter; }

  const void* in = nullptr;
  void* out = nullptr;
  int64_t count = 0;
  DataType dt = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  Stage fill, drain;  // optional
  Gather gather;      // optional, with scatter
  Scatter scatter;
  // Optional: the tensors where they lie, for a transport that reduces them
  // there (only where count * element size reaches caps().direct_min_bytes;
  // then in and out are unused), and the factor the result is multiplied by
  // while each piece is in cache.
  const std::vector<DirectRegion>* regions = nullptr;
  double post = 1.0;
};

// What a Comm's allreduce can do: what the ops layer chooses its strategy
// by (core/ops/allreduce.cc).
struct CommCaps {
  // Tensors of at least this many bytes skip the fusion buffer and run
  // alone, in place (0: fuse everything up to the threshold). Worth it where
  // a call is cheap next to copying the tensor twice (shared-memory MPI),
  // not where each call costs milliseconds (Gloo over TCP).
  int64_t fusion_solo_bytes = 0;
  // Allreduce runs fill and drain itself, around each piece it reduces (MPI:
  // its cache-sized pieces; the hierarchy: its chunks), so that a drain that
  // scales reads each piece while it is still in cache. Elsewhere
  // Comm::Allreduce runs them around the whole reduction.
  bool stages_per_piece = false;
  // ... and runs them while the network works (the hierarchy: beside its
  // cross-host step), so that copies cost no time: callers then pack and
  // unpack the fusion buffer through the stages. Where not, they pack,
  // reduce and unpack as three timed steps.
  bool overlaps_stages = false;
  // Allreduce takes gather and scatter: the transport copies the tensors
  // into memory the others read anyway (shared memory), so packing them
  // first, and unpacking and scaling after, would be passes over the data
  // for nothing.
  bool gathers = false;
  // Host allreduces of at least this many bytes (and no prescale) are
  // fastest given as regions: the transport reads and writes the tensors
  // where they lie (shared memory: a rank's own share reduced from its
  // input into its output; cross-memory attach: the others' inputs too), so
  // gathering them into its own buffers first would only add passes. -1:
  // never. Equal on every rank, so all choose the same path whatever their
  // tensors' layout.
  int64_t direct_min_bytes = -1;
};

// Knobs set after construction (the autotuner's, the data plane's).
struct CommTuning {
  // The size of the pieces large allreduces are cut into (a hint; backends
  // that do not cut ignore it). Unset: unchanged.
  std::optional<int64_t> allreduce_chunk_bytes;
  // From now on, allreduce without busy-waiting: the call runs on a helper
  // thread beside this process's host-local work (the hierarchy's cross
  // step). MPI switches to MpiRingAllreduce; others sleep already. False
  // leaves it as it is.
  bool quiet_allreduce = false;
};

class Comm {
 public:
  using Stage = AllreduceOptions::Stage;
  using Gather = AllreduceOptions::Gather;
  using Scatter = AllreduceOptions::Scatter;

  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Upper-case backend name used in timeline activities: "MPI", "GLOO", "NCCL".
  virtual const char* backend_name() const = 0;
  // The transport underneath (decorators report their inner Comm's): what
  // the data plane decides by, never the name.
  virtual Transport transport() const { return Transport::kOther; }
  // Whether data calls accept memory on `device` (CPU always for MPI/Gloo).
  virtual bool supports_device(const Device& device) const {
    return device.kind == DeviceKind::kCPU;
  }
  // What Allreduce can do (see CommCaps).
  virtual CommCaps caps() const { return CommCaps(); }
  // Applies the knobs that are set.
  virtual void Tune(const CommTuning& /*tuning*/) {}

  // ---- data
  // The one allreduce entry point (AllreduceOptions). Gather and scatter only
  // where caps().gathers; fill and drain run around the whole reduction
  // unless caps().stages_per_piece.
  Status Allreduce(const AllreduceOptions& args);
  // Rank r contributes bytes_per_rank[r] bytes; out receives them in rank order.
  virtual Status Allgatherv(const void* in, void* out,
                            const std::vector<int64_t>& bytes_per_rank) = 0;
  virtual Status Broadcast(void* buf, int64_t bytes, int root) = 0;
  // send_bytes[r] bytes (consecutive in `in`) go to rank r; recv_bytes[r]
  // arrive from rank r, consecutive in `out`.
  virtual Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                           const std::vector<int64_t>& recv_bytes) = 0;
  // Reduce `in` (sum of counts elements) and leave this rank's block
  // (counts[rank] elements, blocks in rank order) in `out`.
  virtual Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                               DataType dt, ReduceOp op) = 0;
  virtual Status Barrier() = 0;
  // Sends send_bytes to `peer` and receives recv_bytes from it (a rank of
  // this Comm other than this one), as one exchange: both sides call it
  // with matching sizes. Zero sizes are allowed. For algorithms built on
  // pairwise exchanges (Adasum); the default runs it as an Alltoallv in
  // which every rank of the Comm must take part at the same time, which
  // holds when every rank exchanges with a partner in the same step.
  virtual Status SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                          int peer);

  // ---- point to point (p2p_request.h): post one message to or from `peer`
  // (another rank of this Comm) on `stream` (P2PStreamTag). Messages on one
  // (peer, stream) arrive in the order they were posted. Thread-safe against
  // each other, and meant for a Comm of their own (Split), not one a set's
  // loop uses. The default: kUnsupported.
  virtual Status Isend(const void* buf, int64_t bytes, int peer, int64_t stream,
                       std::unique_ptr<P2PRequest>* out);
  virtual Status Irecv(void* buf, int64_t bytes, int peer, int64_t stream,
                       std::unique_ptr<P2PRequest>* out);

  // A new Comm over `ranks` (ranks of this Comm, ascending). Collective over
  // the members only; `tag` is unique per call and equal on all members.
  virtual Status Split(const std::vector<int>& ranks, const std::string& tag,
                       std::unique_ptr<Comm>* out) = 0;

  // Gives up on a collective another thread is blocked in (the operation
  // deadline passed): makes it fail now where the transport allows (Gloo),
  // or ends the job where it does not (MPI_Abort). Thread-safe.
  virtual void Abort() {}

  // Moves the transport's messages in flight while the caller waits on
  // something else (a host-local shared-memory barrier): MPI delivers a
  // large nonblocking send, such as the negotiation's decision to a peer,
  // only while the sender calls into MPI. Called from a thread that may
  // make this Comm's calls.
  virtual void Progress() {}

  // Collective: the negotiation channel among this Comm's ranks (host
  // backends only).
  virtual Status OpenControlChannel(const ControlChannelOptions& options,
                                    std::unique_ptr<ControlChannel>* out);

 protected:
  // What each Comm implements: args.in into args.out (in place where they
  // are equal), and the stages or gather and scatter only where caps() says.
  virtual Status DoAllreduce(const AllreduceOptions& args) = 0;
};

// Set-up collectives over a host Comm's data calls, for the moments every
// member is known to take part (init, creating a set or an NCCL
// communicator). Root's *bytes replace *bytes everywhere; every rank gets
// every rank's bytes in rank order.
Status BroadcastBytes(Comm& comm, std::string* bytes, int root);
Status AllgatherBytes(Comm& comm, const std::string& mine, std::vector<std::string>* all);

// For transports that reduce in place: copies args.in to args.out where
// they differ (host memory).
void CopyInputToOutput(const AllreduceOptions& args);

// The one piece loop of an allreduce: [0, args.count) in ascending pieces of
// at most `piece` elements (<= 0: one piece), each filled, reduced by
// reduce(off, n) and drained. At least one piece, so that an empty
// allreduce still checks its arguments.
template <typename Reduce>
Status AllreduceInPieces(const AllreduceOptions& args, int64_t piece, const Reduce& reduce) {
  const int64_t step = piece > 0 && piece < args.count ? piece : args.count;
  int64_t off = 0;
  do {
    const int64_t n = std::min(step, args.count - off);
    if (args.fill) HVD_RETURN_IF_ERROR(args.fill(off, n));
    HVD_RETURN_IF_ERROR(reduce(off, n));
    if (args.drain) HVD_RETURN_IF_ERROR(args.drain(off, n));
    off += step;
  } while (off < args.count);
  return Status::OK();
}

}  // namespace hvd
