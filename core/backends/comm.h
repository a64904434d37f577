// The interface every communication backend implements (MPI, Gloo, NCCL):
// the data collectives of one group of ranks (the world or a process set).
// Negotiation does not use them: it talks over a ControlChannel, which host
// backends open with OpenControlChannel. Buffers are host memory unless the
// backend says it supports devices. Calls are made from one thread at a
// time per Comm (the set's background thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/control_channel.h"
#include "core/backends/p2p_request.h"
#include "core/backends/transport.h"
#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

class Comm {
 public:
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

  // Autotune: the size of the pieces large allreduces are split into (a
  // hint; backends that do not chunk ignore it).
  virtual void SetAllreduceChunkBytes(int64_t /*bytes*/) {}
  // Tensors of at least this many bytes skip the fusion buffer and run
  // alone, in place (0: fuse everything up to the threshold). Worth it where
  // a call is cheap next to copying the tensor twice (shared-memory MPI), not
  // where each call costs milliseconds (Gloo over TCP).
  virtual int64_t fusion_solo_bytes() const { return 0; }
  // The pieces Allreduce splits large buffers into (0: one call). Callers
  // that scale the result do it piece by piece, while each is in cache.
  // Decorators with their own algorithm (hierarchical) keep the default.
  virtual int64_t allreduce_chunk_bytes() const { return 0; }
  // From now on, allreduce without busy-waiting: the call runs on a helper
  // thread beside this process's host-local work (the hierarchy's cross
  // step). MPI switches to MpiRingAllreduce; others sleep already.
  virtual void UseQuietAllreduce() {}

  // ---- data
  // In place over `count` elements; op is kSum, kMin, kMax or kProduct
  // (averaging is a scale applied by the caller).
  virtual Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) = 0;
  // The same, reading `in` and writing `out` (host memory, not overlapping).
  // The default copies then reduces in place; MPI reduces out of place, which
  // saves a pass over the data.
  virtual Status AllreduceFrom(const void* in, void* out, int64_t count, DataType dt, ReduceOp op);
  // Work on elements [off, off + n) of a staged allreduce: fill writes them
  // into its input before they are read, drain reads them from its output
  // once they are final (packing and unpacking the fusion buffer, scaling).
  using Stage = std::function<Status(int64_t off, int64_t n)>;
  // AllreduceFrom (`in` may equal `out`, host memory) with the input filled
  // and the output drained in pieces: ascending, every element once; a null
  // Stage does nothing. The default fills everything, reduces, then drains.
  virtual Status AllreduceStaged(const void* in, void* out, int64_t count, DataType dt, ReduceOp op,
                                 const Stage& fill, const Stage& drain);
  // Whether AllreduceStaged runs the stages while the network works (the
  // hierarchy: beside its cross-host step), so that copies cost no time.
  // Where not, callers pack, reduce and unpack as three timed steps.
  virtual bool overlaps_stages() const { return false; }
  // Elements [off, off + n) of an allreduce's input, written to dst
  // (gather), or its final elements, read from src (scatter), in any order,
  // each element once: the caller's tensors packed and unpacked by the
  // transport itself, straight into and out of its own buffers.
  using Gather = std::function<Status(int64_t off, int64_t n, void* dst)>;
  using Scatter = std::function<Status(int64_t off, int64_t n, const void* src)>;
  // Whether AllreduceGathered runs without a fusion buffer: the transport
  // copies the tensors into memory the others read anyway (shared memory),
  // so packing them first, and unpacking and scaling after, would be
  // passes over the data for nothing.
  virtual bool gathers() const { return false; }
  // An allreduce of `count` elements whose input comes from gather and whose
  // result goes to scatter (only where gathers()).
  virtual Status AllreduceGathered(int64_t count, DataType dt, ReduceOp op, const Gather& gather,
                                   const Scatter& scatter);
  // Host allreduces of at least this many bytes (and no prescale) are
  // fastest through AllreduceDirect: the transport reads the other ranks'
  // memory where it lies (cross-memory attach), so copying the tensors into
  // its own buffers first would only add passes. -1: never. Equal on every
  // rank, so all choose the same path whatever their tensors' layout.
  virtual int64_t direct_min_bytes() const { return -1; }
  // Consecutive elements of a direct allreduce: n elements read from `in`
  // (null: zeros, a joined rank's part) and written to `out`; in may equal
  // out. Addresses, so that other processes can read them.
  struct DirectRegion {
    uint64_t in;
    uint64_t out;
    int64_t n;
  };
  // An allreduce of `count` elements lying in `regions` (in order, their n
  // summing to count), the result multiplied by `post` while each piece is
  // in cache. Only where direct_min_bytes() >= 0.
  virtual Status AllreduceDirect(const std::vector<DirectRegion>& regions, int64_t count,
                                 DataType dt, ReduceOp op, double post);
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
};

// Set-up collectives over a host Comm's data calls, for the moments every
// member is known to take part (init, creating a set or an NCCL
// communicator). Root's *bytes replace *bytes everywhere; every rank gets
// every rank's bytes in rank order.
Status BroadcastBytes(Comm& comm, std::string* bytes, int root);
Status AllgatherBytes(Comm& comm, const std::string& mine, std::vector<std::string>* all);

// Comm::AllreduceStaged's default, on `comm`: fill everything, reduce, drain.
Status AllreduceStagedInTurn(Comm& comm, const void* in, void* out, int64_t count, DataType dt,
                             ReduceOp op, const Comm::Stage& fill, const Comm::Stage& drain);

}  // namespace hvd
