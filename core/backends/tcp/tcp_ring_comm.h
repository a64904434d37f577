// The cross-host Comm of hierarchical allreduce with its allreduces on a
// TcpRing (tcp_ring.h); every other call stays on the backend's Comm.
#pragma once

#include <cstring>
#include <memory>

#include "core/backends/forwarding_comm.h"
#include "core/backends/tcp/tcp_ring.h"

namespace hvd {

class TcpRingComm : public ForwardingComm {
 public:
  TcpRingComm(std::shared_ptr<Comm> backend, std::unique_ptr<TcpRing> ring)
      : ForwardingComm(std::move(backend)), ring_(std::move(ring)) {}

  Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) override {
    return ring_->Allreduce(buf, count, dt, op);
  }
  Status AllreduceFrom(const void* in, void* out, int64_t count, DataType dt,
                       ReduceOp op) override {
    if (in != out && count > 0) std::memcpy(out, in, static_cast<size_t>(count) * DataTypeSize(dt));
    return ring_->Allreduce(out, count, dt, op);
  }
  void Abort() override {
    ring_->Abort();
    ForwardingComm::Abort();
  }

 private:
  std::unique_ptr<TcpRing> ring_;
};

}  // namespace hvd
