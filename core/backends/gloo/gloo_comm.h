// hvd::Comm over a Gloo context (TCP transport). One GlooComm is one group of
// ranks: the world or a process set made by Split. Every Gloo call runs under
// GlooGuard, so failures come back as a Status (kPeerLost / kTimeout) and
// never as an exception or a hang; after the first failure the Comm refuses
// further work, because Gloo's pairs are unusable once an I/O error hit them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/backends/gloo/gloo_error.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
namespace transport {
class Device;
}
}  // namespace gloo

namespace hvd {

namespace gloo_backend {
struct P2PState;  // gloo_p2p.cc
}  // namespace gloo_backend

// What all Comms of one job share: the TCP device (one listening socket and
// event loop), the rendezvous store used to build new contexts, the timeout
// and this rank's host name (HostKey(), launch_env.h) for error messages.
struct GlooShared {
  std::shared_ptr<gloo::transport::Device> device;  // null only for a 1-rank job
  std::shared_ptr<gloo::rendezvous::Store> store;   // null only for a 1-rank job
  std::chrono::milliseconds timeout{30000};         // connecting
  // Each collective: the Gloo timeout, or the operation deadline when that
  // is shorter (Gloo's own timeout is how a collective stuck on a stopped
  // peer ends; Abort cannot reach into it).
  std::chrono::milliseconds op_timeout{30000};
  std::string host;  // this rank's host name, as the topology computed it
  // An address of this host the other ranks can reach, for the sockets of
  // the negotiation channel (the one Gloo's device listens on).
  std::string control_host = "127.0.0.1";
};

class GlooComm : public Comm {
 public:
  // Connects `rank` of `size` in a full mesh; the ranks exchange addresses
  // in `shared->store` under `prefix`, which must be unique per group and
  // equal on all its members. A group of one needs neither store nor device.
  static Status Create(std::shared_ptr<const GlooShared> shared, const std::string& prefix,
                       int rank, int size, std::unique_ptr<GlooComm>* out);
  // Same, for a subgroup: `world_rank` is this process's rank in the world,
  // which errors use to name ranks the way the user and hvdrun know them.
  static Status Create(std::shared_ptr<const GlooShared> shared, const std::string& prefix,
                       int rank, int size, int world_rank, std::unique_ptr<GlooComm>* out);

  // Use Create; public only so that std::make_unique can reach it.
  GlooComm(std::shared_ptr<const GlooShared> shared, std::string prefix, int rank, int size,
           std::shared_ptr<gloo::Context> context,
           std::vector<gloo_backend::PeerAddress> peers = {});
  ~GlooComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "GLOO"; }
  Transport transport() const override { return Transport::kGloo; }

  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buf, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override;
  Status Barrier() override;
  Status SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                  int peer) override;
  // Header + payload over unbound buffers, each message waited for by a
  // thread of its own (gloo_p2p.cc).
  Status Isend(const void* buf, int64_t bytes, int peer, int64_t stream,
               std::unique_ptr<P2PRequest>* out) override;
  Status Irecv(void* buf, int64_t bytes, int peer, int64_t stream,
               std::unique_ptr<P2PRequest>* out) override;
  Status Split(const std::vector<int>& ranks, const std::string& tag,
               std::unique_ptr<Comm>* out) override;
  // TCP sockets on Gloo's own address (its pairs can only be waited on).
  Status OpenControlChannel(const ControlChannelOptions& options,
                            std::unique_ptr<ControlChannel>* out) override;

  const std::string& prefix() const { return prefix_; }

 protected:
  // In place (an out-of-place call copies its input first).
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  // Runs fn under GlooGuard; remembers the first failure and refuses later calls.
  Status Run(const char* op, const std::function<void()>& fn);
  Status StartP2P(bool recv, void* buf, int64_t bytes, int peer, int64_t stream,
                  std::unique_ptr<P2PRequest>* out);
  Status CheckRoot(const char* op, int root) const;
  Status CheckPerRank(const char* op, const char* what, const std::vector<int64_t>& v) const;

  std::shared_ptr<const GlooShared> shared_;
  std::string prefix_;
  int rank_;
  int size_;
  std::shared_ptr<gloo::Context> context_;  // null when size_ == 1
  // Per rank of this group: its world rank, host and Gloo address, so that
  // a lost connection names the rank (see gloo_error.h). Empty if unknown.
  std::vector<gloo_backend::PeerAddress> peers_;
  Status broken_;
  std::once_flag p2p_once_;
  std::shared_ptr<gloo_backend::P2PState> p2p_;  // made on the first message
};

}  // namespace hvd
