// A Comm whose allreduces of `min_bytes` or more run on a TcpRing
// (tcp_ring.h) over its members; smaller ones and every other call stay on
// the backend's Comm. Hierarchical allreduce's cross-host step, and the
// allreduce of a set with one rank on each of several hosts.
#pragma once

#include <memory>

#include "core/algorithms/tcp_ring.h"
#include "core/backends/forwarding_comm.h"

namespace hvd {

class TcpRingComm : public ForwardingComm {
 public:
  TcpRingComm(std::shared_ptr<Comm> backend, std::unique_ptr<TcpRing> ring, int64_t min_bytes = 0)
      : ForwardingComm(std::move(backend)), ring_(std::move(ring)), min_bytes_(min_bytes) {}

  // The ring streams a whole fused buffer: fuse every size.
  CommCaps caps() const override { return CommCaps(); }
  void Abort() override {
    ring_->Abort();
    ForwardingComm::Abort();
  }

 protected:
  Status DoAllreduce(const AllreduceOptions& a) override {
    if (Small(a.count, a.dt)) return ForwardingComm::DoAllreduce(a);
    CopyInputToOutput(a);
    return ring_->Allreduce(a.out, a.count, a.dt, a.op);
  }

 private:
  bool Small(int64_t count, DataType dt) const {
    return count <= 0 || count * static_cast<int64_t>(DataTypeSize(dt)) < min_bytes_;
  }

  std::unique_ptr<TcpRing> ring_;
  int64_t min_bytes_;
};

}  // namespace hvd
