#include "core/ops/host_mem_ops.h"

#include <cstring>

#include "core/common/reduce.h"

namespace hvd {

Status HostMemOps::ScaleCopy(void* dst, const void* src, int64_t count, DataType dt,
                             double factor) {
  ::hvd::ScaleCopy(dst, src, count, dt, factor);
  return Status::OK();
}

Status HostMemOps::Zero(void* buf, int64_t count, DataType dt) {
  ZeroBuffer(buf, count, dt);
  return Status::OK();
}

Status HostMemOps::CopyRegions(const std::vector<Region>& regions) {
  for (const auto& r : regions) {
    if (r.bytes > 0) std::memcpy(r.dst, r.src, static_cast<size_t>(r.bytes));
  }
  return Status::OK();
}

Status HostMemOps::Fusion(int64_t bytes, void** out) {
  if (!fusion_) return Status::Internal("no fusion buffer in this execution context");
  *out = fusion_->Get(bytes);
  return Status::OK();
}

}  // namespace hvd
