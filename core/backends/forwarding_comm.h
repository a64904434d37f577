// A Comm that hands every call to another Comm: the base of decorators
// that change a few calls (hierarchical allreduce) and keep the rest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"

namespace hvd {

class ForwardingComm : public Comm {
 public:
  explicit ForwardingComm(std::shared_ptr<Comm> inner) : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend_name() const override { return inner_->backend_name(); }
  Transport transport() const override { return inner_->transport(); }
  bool supports_device(const Device& d) const override { return inner_->supports_device(d); }
  // The inner Comm's fusion size only: a decorator's allreduce is its own
  // (it states its pieces and stages itself).
  CommCaps caps() const override {
    CommCaps c;
    c.fusion_solo_bytes = inner_->caps().fusion_solo_bytes;
    return c;
  }
  void Tune(const CommTuning& tuning) override { inner_->Tune(tuning); }

  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& b) override {
    return inner_->Allgatherv(in, out, b);
  }
  Status Broadcast(void* buf, int64_t bytes, int root) override {
    return inner_->Broadcast(buf, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& s, void* out,
                   const std::vector<int64_t>& r) override {
    return inner_->Alltoallv(in, s, out, r);
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override {
    return inner_->Reducescatter(in, out, counts, dt, op);
  }
  Status Barrier() override { return inner_->Barrier(); }
  Status SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                  int peer) override {
    return inner_->SendRecv(send, send_bytes, recv, recv_bytes, peer);
  }
  Status Split(const std::vector<int>& r, const std::string& t, std::unique_ptr<Comm>* o) override {
    return inner_->Split(r, t, o);
  }
  void Abort() override { inner_->Abort(); }
  void Progress() override { inner_->Progress(); }
  Status OpenControlChannel(const ControlChannelOptions& options,
                            std::unique_ptr<ControlChannel>* out) override {
    return inner_->OpenControlChannel(options, out);
  }

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override { return inner_->Allreduce(args); }
  Comm& inner() const { return *inner_; }

 private:
  std::shared_ptr<Comm> inner_;
};

}  // namespace hvd
