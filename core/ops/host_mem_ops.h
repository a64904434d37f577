// MemOps on host memory: plain loops, the process set's host fusion buffer.
#pragma once

#include "core/coordination/fusion.h"
#include "core/ops/mem_ops.h"

namespace hvd {

class HostMemOps : public MemOps {
 public:
  explicit HostMemOps(FusionBuffer* fusion = nullptr) : fusion_(fusion) {}
  void set_fusion(FusionBuffer* f) { fusion_ = f; }
  Status ScaleCopy(void* dst, const void* src, int64_t count, DataType dt, double factor) override;
  Status Zero(void* buf, int64_t count, DataType dt) override;
  Status CopyRegions(const std::vector<Region>& regions) override;
  Status Fusion(int64_t bytes, void** out) override;

 private:
  FusionBuffer* fusion_;
};

}  // namespace hvd
