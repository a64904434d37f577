// hvd::Comm over an MPI communicator (Open MPI): the blocking MPI
// collectives (the fastest path; a stalled peer is caught by the runtime's
// operation deadline). Negotiation runs on TCP sockets, or on an MpiChannel
// over a duplicate where sockets do not reach.
#pragma once

#include <mpi.h>

#include <memory>

#include "core/backends/comm.h"
#include "core/backends/mpi/mpi_quiet_allreduce.h"

namespace hvd {

class MpiComm : public Comm {
 public:
  // Takes ownership of `comm` (freed in the destructor). Allreduces larger
  // than chunk_bytes run as several calls of at most that size (0: never).
  MpiComm(MPI_Comm comm, int64_t chunk_bytes);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "MPI"; }
  Transport transport() const override { return Transport::kMpi; }
  // Allreduces run in pieces of chunk_bytes, each drained after its
  // reduction.
  CommCaps caps() const override;
  // allreduce_chunk_bytes: the pieces. quiet_allreduce: from now on
  // Allreduce runs as the registered quiet allreduce (mpi_quiet_allreduce.h:
  // a ring of nonblocking pieces that waits by sleeping) instead of
  // MPI_Allreduce: for the cross-host step of hierarchical allreduce, which
  // runs beside another thread's MPI calls.
  void Tune(const CommTuning& tuning) override;

  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buf, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override;
  Status Barrier() override;
  Status SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                  int peer) override;
  // MPI_Isend/MPI_Irecv on this communicator (mpi_p2p.cc); the MPI tag is
  // the stream. Needs MPI_THREAD_MULTIPLE (the p2p engine's thread).
  Status Isend(const void* buf, int64_t bytes, int peer, int64_t stream,
               std::unique_ptr<P2PRequest>* out) override;
  Status Irecv(void* buf, int64_t bytes, int peer, int64_t stream,
               std::unique_ptr<P2PRequest>* out) override;
  Status Split(const std::vector<int>& ranks, const std::string& tag,
               std::unique_ptr<Comm>* out) override;
  // TCP sockets (options.host) unless options say MPI or, by default, some
  // member cannot reach the coordinator: then MPI messages (MpiChannel).
  Status OpenControlChannel(const ControlChannelOptions& options,
                            std::unique_ptr<ControlChannel>* out) override;
  void Abort() override { MPI_Abort(comm_, 1); }
  // Open MPI's progress engine serves every communicator.
  void Progress() override;

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  Status Check(int rc, const char* what);

  MPI_Comm comm_;
  int64_t chunk_bytes_;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<MpiAllreduceAlgorithm> quiet_;  // set by Tune (quiet_allreduce)
};

// MPI datatype and op for hvd's types; 16-bit floats use user-defined ops
// that compute in float.
MPI_Datatype ToMpiType(DataType dt);
MPI_Op ToMpiOp(DataType dt, ReduceOp op);

}  // namespace hvd
