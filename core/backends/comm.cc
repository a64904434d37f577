#include "core/backends/comm.h"

#include <cstring>

#include "core/common/wire.h"

namespace hvd {

Status Comm::AllreduceFrom(const void* in, void* out, int64_t count, DataType dt, ReduceOp op) {
  std::memcpy(out, in, static_cast<size_t>(count) * DataTypeSize(dt));
  return Allreduce(out, count, dt, op);
}

Status Comm::AllgatherBytes(const std::string& mine, std::vector<std::string>* all) {
  std::vector<std::string> gathered;
  HVD_RETURN_IF_ERROR(GatherBytes(mine, 0, &gathered));
  std::string packed;
  if (rank() == 0) {
    WireWriter w;
    for (const auto& s : gathered) w.Str(s);
    packed = w.Take();
  }
  HVD_RETURN_IF_ERROR(BroadcastBytes(&packed, 0));
  WireReader r(packed);
  all->assign(static_cast<size_t>(size()), std::string());
  for (auto& s : *all) {
    if (!r.Str(&s)) return Status::Internal("malformed allgather of bytes");
  }
  return Status::OK();
}

}  // namespace hvd
