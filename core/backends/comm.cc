#include "core/backends/comm.h"

#include <cstring>

#include "core/common/wire.h"

namespace hvd {

Status Comm::AllreduceFrom(const void* in, void* out, int64_t count, DataType dt, ReduceOp op) {
  std::memcpy(out, in, static_cast<size_t>(count) * DataTypeSize(dt));
  return Allreduce(out, count, dt, op);
}

Status Comm::SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                      int peer) {
  if (peer < 0 || peer >= size() || peer == rank()) {
    return Status::Invalid("sendrecv: peer " + std::to_string(peer) + " is not another rank of " +
                           std::to_string(size()));
  }
  std::vector<int64_t> sends(static_cast<size_t>(size()), 0), recvs(sends.size(), 0);
  sends[static_cast<size_t>(peer)] = send_bytes;
  recvs[static_cast<size_t>(peer)] = recv_bytes;
  return Alltoallv(send, sends, recv, recvs);
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
