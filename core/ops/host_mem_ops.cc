#include "core/ops/host_mem_ops.h"

#include <cstring>

#include "core/common/reduce.h"
#include "core/common/traffic.h"

namespace hvd {

Status HostMemOps::ScaleCopy(void* dst, const void* src, int64_t count, DataType dt,
                             double factor) {
  ::hvd::ScaleCopy(dst, src, count, dt, factor);
  // Read and written, unless a copy onto itself (nothing to do).
  if (dst != src || factor != 1.0) CountMoved(2 * count * static_cast<int64_t>(DataTypeSize(dt)));
  return Status::OK();
}

Status HostMemOps::Zero(void* buf, int64_t count, DataType dt) {
  ZeroBuffer(buf, count, dt);
  CountMoved(count * static_cast<int64_t>(DataTypeSize(dt)));
  return Status::OK();
}

Status HostMemOps::CopyRegions(const std::vector<Region>& regions) {
  for (const auto& r : regions) {
    if (r.bytes > 0) std::memcpy(r.dst, r.src, static_cast<size_t>(r.bytes));
    CountMoved(2 * r.bytes);
  }
  return Status::OK();
}

Status HostMemOps::Fusion(int64_t bytes, void** out) {
  if (!fusion_) return Status::Internal("no fusion buffer in this execution context");
  *out = fusion_->Get(bytes);
  return Status::OK();
}

}  // namespace hvd
