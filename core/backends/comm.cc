#include "core/backends/comm.h"

#include <cstring>
#include <numeric>

namespace hvd {

Status Comm::Allreduce(const AllreduceOptions& args) {
  if (args.regions) {
    if (caps().direct_min_bytes < 0 || args.gathered() || args.staged()) {
      return Status::Internal(std::string(backend_name()) + " has no direct allreduce");
    }
    return DoAllreduce(args);
  }
  if (args.gathered()) {
    if (!caps().gathers || !args.gather || !args.scatter) {
      return Status::Internal(std::string(backend_name()) + " has no gathered allreduce");
    }
    return DoAllreduce(args);
  }
  if (!args.staged() || caps().stages_per_piece) return DoAllreduce(args);
  // Stages around the whole reduction: fill everything, reduce, drain.
  return AllreduceInPieces(args, 0, [&](int64_t, int64_t) {
    return DoAllreduce(AllreduceOptions(args.in, args.out, args.count, args.dt, args.op));
  });
}

void CopyInputToOutput(const AllreduceOptions& args) {
  if (args.in == args.out || args.count <= 0) return;
  std::memcpy(args.out, args.in, static_cast<size_t>(args.count) * DataTypeSize(args.dt));
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

Status Comm::Isend(const void*, int64_t, int, int64_t, std::unique_ptr<P2PRequest>*) {
  return Status::Unsupported(std::string(backend_name()) +
                             " has no point-to-point messages (hvd_send_async needs MPI or Gloo)");
}

Status Comm::Irecv(void*, int64_t, int, int64_t, std::unique_ptr<P2PRequest>*) {
  return Status::Unsupported(std::string(backend_name()) +
                             " has no point-to-point messages (hvd_recv_async needs MPI or Gloo)");
}

Status Comm::OpenControlChannel(const ControlChannelOptions&, std::unique_ptr<ControlChannel>*) {
  return Status::Unsupported(std::string(backend_name()) +
                             " cannot carry negotiation messages (use a host backend)");
}

Status BroadcastBytes(Comm& comm, std::string* bytes, int root) {
  int64_t n = comm.rank() == root ? static_cast<int64_t>(bytes->size()) : 0;
  HVD_RETURN_IF_ERROR(comm.Broadcast(&n, sizeof(n), root));
  if (n < 0) return Status::Internal("broadcast of bytes: negative size from the root");
  if (comm.rank() != root) bytes->assign(static_cast<size_t>(n), '\0');
  return n == 0 ? Status::OK() : comm.Broadcast(&(*bytes)[0], n, root);
}

Status AllgatherBytes(Comm& comm, const std::string& mine, std::vector<std::string>* all) {
  const size_t size = static_cast<size_t>(comm.size());
  std::vector<int64_t> sizes(size, 0);
  const int64_t my_size = static_cast<int64_t>(mine.size());
  HVD_RETURN_IF_ERROR(
      comm.Allgatherv(&my_size, sizes.data(), std::vector<int64_t>(size, sizeof(int64_t))));
  for (int64_t s : sizes) {
    if (s < 0) return Status::Internal("allgather of bytes: a rank announced a negative size");
  }
  std::string flat(static_cast<size_t>(std::accumulate(sizes.begin(), sizes.end(), int64_t{0})),
                   '\0');
  HVD_RETURN_IF_ERROR(comm.Allgatherv(mine.data(), &flat[0], sizes));
  all->assign(size, std::string());
  size_t offset = 0;
  for (size_t r = 0; r < size; ++r) {
    (*all)[r] = flat.substr(offset, static_cast<size_t>(sizes[r]));
    offset += static_cast<size_t>(sizes[r]);
  }
  return Status::OK();
}

}  // namespace hvd
