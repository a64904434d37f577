// A Comm whose allreduces of `min_bytes` or more run on a TcpRing
// (tcp_ring.h) over its members; smaller ones and every other call stay on
// the backend's Comm. Hierarchical allreduce's cross-host step, and the
// allreduce of a set with one rank on each of several hosts.
#pragma once

#include <cstring>
#include <memory>

#include "core/backends/forwarding_comm.h"
#include "core/algorithms/tcp_ring.h"

namespace hvd {

class TcpRingComm : public ForwardingComm {
 public:
  TcpRingComm(std::shared_ptr<Comm> backend, std::unique_ptr<TcpRing> ring, int64_t min_bytes = 0)
      : ForwardingComm(std::move(backend)), ring_(std::move(ring)), min_bytes_(min_bytes) {}

  // The ring streams a whole fused buffer: fuse every size.
  int64_t fusion_solo_bytes() const override { return 0; }
  Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) override {
    if (Small(count, dt)) return ForwardingComm::Allreduce(buf, count, dt, op);
    return ring_->Allreduce(buf, count, dt, op);
  }
  Status AllreduceFrom(const void* in, void* out, int64_t count, DataType dt,
                       ReduceOp op) override {
    if (Small(count, dt)) return ForwardingComm::AllreduceFrom(in, out, count, dt, op);
    if (in != out) std::memcpy(out, in, static_cast<size_t>(count) * DataTypeSize(dt));
    return ring_->Allreduce(out, count, dt, op);
  }
  void Abort() override {
    ring_->Abort();
    ForwardingComm::Abort();
  }

 private:
  bool Small(int64_t count, DataType dt) const {
    return count <= 0 || count * static_cast<int64_t>(DataTypeSize(dt)) < min_bytes_;
  }

  std::unique_ptr<TcpRing> ring_;
  int64_t min_bytes_;
};

}  // namespace hvd
