#include "core/backends/gloo/gloo_comm.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/backends/crossovers.h"
#include "core/backends/gloo/gloo_error.h"
#include "core/backends/gloo/gloo_reduce.h"
#include "core/backends/tcp/tcp_channel.h"
#include "core/common/host_buffer.h"

namespace hvd {

using gloo_backend::GlooGuard;
using gloo_backend::PeerAddress;
using gloo_backend::ReduceFn;

namespace {

// Slot prefix for hvd's own point-to-point messages. Gloo's collectives use
// prefixes 0x01..0x08, so 0x7d never collides with them.
constexpr uint8_t kHvdReduceScatterSlotPrefix = 0x7d;
constexpr uint8_t kHvdSendRecvSlotPrefix = 0x7c;

// Gloo wants a mutable pointer even for buffers it only reads, and a real
// pointer even for zero bytes.
void* Mutable(const void* p) {
  static char dummy = 0;
  return p != nullptr ? const_cast<void*>(p) : &dummy;
}

void WaitRecv(gloo::transport::UnboundBuffer* buf, std::chrono::milliseconds timeout) {
  if (!buf->waitRecv(timeout)) GLOO_THROW_IO_EXCEPTION("receive aborted");
}
void WaitSend(gloo::transport::UnboundBuffer* buf, std::chrono::milliseconds timeout) {
  if (!buf->waitSend(timeout)) GLOO_THROW_IO_EXCEPTION("send aborted");
}

// Gloo's templated setters only use sizeof(T); pick an unsigned type of the
// element's width so the ring splits buffers on element boundaries.
template <typename Opts>
void SetAllreduceOutput(Opts* opts, void* buf, size_t count, size_t elem) {
  switch (elem) {
    case 1:
      opts->setOutput(static_cast<uint8_t*>(buf), count);
      break;
    case 2:
      opts->setOutput(static_cast<uint16_t*>(buf), count);
      break;
    case 4:
      opts->setOutput(static_cast<uint32_t*>(buf), count);
      break;
    default:
      opts->setOutput(static_cast<uint64_t*>(buf), count);
      break;
  }
}

// After connectFullMesh: every rank publishes "world rank \n host \n its
// Gloo address" and reads everyone else's. The address is what Gloo prints
// in "Connection closed by peer <address>", which is how an error is mapped
// back to a rank. Best effort: naming must never make a connect fail, so a
// problem here only leaves the list empty.
std::vector<PeerAddress> ExchangePeerAddresses(gloo::rendezvous::Store& store, gloo::Context& ctx,
                                               const std::string& host, int rank, int size,
                                               int world_rank) {
  std::vector<PeerAddress> peers(size);
  try {
    const int other = rank == 0 ? 1 : 0;
    const std::string mine =
        std::to_string(world_rank) + "\n" + host + "\n" + ctx.getPair(other)->address().str();
    store.set("hvd_peer_" + std::to_string(rank), std::vector<char>(mine.begin(), mine.end()));
    for (int r = 0; r < size; ++r) {
      const std::vector<char> v = store.get("hvd_peer_" + std::to_string(r));
      const std::string text(v.begin(), v.end());
      const size_t a = text.find('\n');
      const size_t b = a == std::string::npos ? a : text.find('\n', a + 1);
      if (b == std::string::npos) return {};
      peers[r].rank = std::atoi(text.substr(0, a).c_str());
      peers[r].host = text.substr(a + 1, b - a - 1);
      peers[r].address = text.substr(b + 1);
    }
  } catch (const std::exception&) {
    return {};
  }
  return peers;
}

}  // namespace

GlooComm::GlooComm(std::shared_ptr<const GlooShared> shared, std::string prefix, int rank, int size,
                   std::shared_ptr<gloo::Context> context,
                   std::vector<gloo_backend::PeerAddress> peers)
    : shared_(std::move(shared)),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      context_(std::move(context)),
      peers_(std::move(peers)) {}

GlooComm::~GlooComm() = default;

Status GlooComm::Create(std::shared_ptr<const GlooShared> shared, const std::string& prefix,
                        int rank, int size, std::unique_ptr<GlooComm>* out) {
  return Create(std::move(shared), prefix, rank, size, rank, out);
}

Status GlooComm::Create(std::shared_ptr<const GlooShared> shared, const std::string& prefix,
                        int rank, int size, int world_rank, std::unique_ptr<GlooComm>* out) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::Invalid("Gloo: invalid rank " + std::to_string(rank) + " of size " +
                           std::to_string(size));
  }
  if (!shared) return Status::Internal("Gloo: no shared state");
  std::shared_ptr<gloo::Context> context;
  std::vector<PeerAddress> peers;
  if (size > 1) {
    if (!shared->device || !shared->store) {
      return Status::Internal("Gloo: a group of " + std::to_string(size) +
                              " ranks needs a rendezvous store and a TCP device");
    }
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(shared->timeout);
    const std::string where = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
                              ", store prefix '" + prefix + "'";
    auto connect = [&] {
      gloo::rendezvous::PrefixStore store(prefix, *shared->store);
      std::shared_ptr<gloo::transport::Device> device = shared->device;
      ctx->connectFullMesh(store, device);
      peers = ExchangePeerAddresses(store, *ctx, shared->host, rank, size, world_rank);
    };
    HVD_RETURN_IF_ERROR(
        gloo_backend::NameMissingRanks(GlooGuard("connect", where, connect), prefix, size));
    context = std::move(ctx);
  }
  *out = std::make_unique<GlooComm>(std::move(shared), prefix, rank, size, std::move(context),
                                    std::move(peers));
  return Status::OK();
}

Status GlooComm::Run(const char* op, const std::function<void()>& fn) {
  if (!broken_.ok()) {
    return Status(broken_.code(),
                  std::string("Gloo ") + op +
                      ": communicator unusable after an earlier error: " + broken_.message());
  }
  Status s = gloo_backend::NamePeer(
      GlooGuard(op, "rank " + std::to_string(rank_) + " of " + std::to_string(size_), fn), peers_);
  if (!s.ok()) broken_ = s;
  return s;
}

Status GlooComm::CheckRoot(const char* op, int root) const {
  if (root < 0 || root >= size_) {
    return Status::Invalid(std::string("Gloo ") + op + ": root " + std::to_string(root) +
                           " out of range for " + std::to_string(size_) + " ranks");
  }
  return Status::OK();
}

Status GlooComm::CheckPerRank(const char* op, const char* what,
                              const std::vector<int64_t>& v) const {
  if (v.size() != static_cast<size_t>(size_)) {
    return Status::Invalid(std::string("Gloo ") + op + ": " + what + " has " +
                           std::to_string(v.size()) + " entries for " + std::to_string(size_) +
                           " ranks");
  }
  for (int64_t x : v) {
    if (x < 0) return Status::Invalid(std::string("Gloo ") + op + ": negative " + what);
  }
  return Status::OK();
}

// ---- data

Status GlooComm::DoAllreduce(const AllreduceOptions& a) {
  const int64_t count = a.count;
  const DataType dt = a.dt;
  void* buf = a.out;
  if (count < 0) return Status::Invalid("Gloo allreduce: negative element count");
  ReduceFn fn;
  HVD_RETURN_IF_ERROR(gloo_backend::GetReduceFunction(dt, a.op, &fn));
  CopyInputToOutput(a);
  if (size_ == 1 || count == 0) return Status::OK();  // Gloo's ring rejects 0 elements
  return Run("allreduce", [&] {
    gloo::AllreduceOptions opts(context_);
    const size_t elem = DataTypeSize(dt);
    SetAllreduceOutput(&opts, buf, static_cast<size_t>(count), elem);
    if (count * static_cast<int64_t>(elem) <= kGlooBcubeMaxBytes) {
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
    }
    opts.setReduceFunction(fn);
    opts.setTimeout(shared_->op_timeout);
    gloo::allreduce(opts);
  });
}

Status GlooComm::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(CheckPerRank("allgatherv", "bytes_per_rank", bytes_per_rank));
  int64_t offset = 0;
  for (int r = 0; r < rank_; ++r) offset += bytes_per_rank[r];
  const int64_t total = std::accumulate(bytes_per_rank.begin(), bytes_per_rank.end(), int64_t{0});
  char* my_slot = static_cast<char*>(out) + offset;
  const int64_t mine = bytes_per_rank[rank_];
  if (size_ == 1 || total == 0) {
    if (mine > 0 && in != my_slot) std::memmove(my_slot, in, static_cast<size_t>(mine));
    return Status::OK();
  }
  return Run("allgatherv", [&] {
    gloo::AllgathervOptions opts(context_);
    // Without an input Gloo expects this rank's block already in place.
    if (mine > 0 && in != my_slot) opts.setInput(static_cast<uint8_t*>(Mutable(in)), mine);
    std::vector<size_t> elements(bytes_per_rank.begin(), bytes_per_rank.end());
    opts.setOutput(static_cast<uint8_t*>(out), std::move(elements));
    opts.setTimeout(shared_->op_timeout);
    gloo::allgatherv(opts);
  });
}

Status GlooComm::Broadcast(void* buf, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  if (bytes < 0) return Status::Invalid("Gloo broadcast: negative byte count");
  if (size_ == 1 || bytes == 0) return Status::OK();
  return Run("broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(buf), static_cast<size_t>(bytes));
    opts.setRoot(root);
    opts.setTimeout(shared_->op_timeout);
    gloo::broadcast(opts);
  });
}

Status GlooComm::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                           const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoallv", "send_bytes", send_bytes));
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoallv", "recv_bytes", recv_bytes));
  if (send_bytes[rank_] != recv_bytes[rank_]) {
    return Status::Invalid("Gloo alltoallv: this rank sends itself " +
                           std::to_string(send_bytes[rank_]) + " bytes but expects " +
                           std::to_string(recv_bytes[rank_]));
  }
  if (size_ == 1) {
    if (send_bytes[0] > 0 && in != out) {
      std::memmove(out, in, static_cast<size_t>(send_bytes[0]));
    }
    return Status::OK();
  }
  return Run("alltoallv", [&] {
    gloo::AlltoallvOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(Mutable(in)), send_bytes);
    opts.setOutput(static_cast<uint8_t*>(Mutable(out)), recv_bytes);
    opts.setTimeout(shared_->op_timeout);
    gloo::alltoallv(opts);
  });
}

Status GlooComm::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                               DataType dt, ReduceOp op) {
  HVD_RETURN_IF_ERROR(CheckPerRank("reducescatter", "counts", counts));
  ReduceFn fn;
  HVD_RETURN_IF_ERROR(gloo_backend::GetReduceFunction(dt, op, &fn));
  const size_t elem = DataTypeSize(dt);
  std::vector<size_t> offsets(size_ + 1, 0);  // in bytes
  for (int r = 0; r < size_; ++r) offsets[r + 1] = offsets[r] + counts[r] * elem;
  const size_t mine = static_cast<size_t>(counts[rank_]) * elem;
  if (size_ == 1) {
    if (mine > 0 && in != out) std::memmove(out, in, mine);
    return Status::OK();
  }
  // Ring reduce-scatter (Gloo 0.5 has none in its new API, and its old
  // ReduceScatterHalvingDoubling is float-only): in step s rank r passes its
  // partial sum of block (r-s-1) to r+1 and folds block (r-s-2) from r-1
  // into its own; after size-1 steps block r holds every rank's share.
  // Each block crosses each link once: half the traffic of an allreduce.
  // Scratch from HostBuffer: fresh pages for every call cost more than the
  // ring itself on large inputs (host_buffer.h).
  HostBuffer scratch(offsets[size_]);
  if (scratch.size() > 0) std::memcpy(scratch.data(), in, scratch.size());
  size_t max_block = 0;
  for (int r = 0; r < size_; ++r) max_block = std::max(max_block, offsets[r + 1] - offsets[r]);
  HostBuffer incoming(max_block);
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  const uint64_t slot = gloo::Slot::build(kHvdReduceScatterSlotPrefix, 0);
  const auto timeout = shared_->op_timeout;
  HVD_RETURN_IF_ERROR(Run("reducescatter", [&] {
    if (scratch.size() == 0) return;  // nothing anywhere: every rank skips alike
    auto send_buf = context_->createUnboundBuffer(scratch.data(), scratch.size());
    auto recv_buf = context_->createUnboundBuffer(incoming.data(), incoming.size());
    for (int step = 0; step < size_ - 1; ++step) {
      const int sb = ((rank_ - step - 1) % size_ + size_) % size_;
      const int rb = ((rank_ - step - 2) % size_ + size_) % size_;
      const size_t send_len = offsets[sb + 1] - offsets[sb];
      const size_t recv_len = offsets[rb + 1] - offsets[rb];
      // Zero-length blocks are skipped on both ends: both know the counts.
      if (recv_len > 0) recv_buf->recv(prev, slot, 0, recv_len);
      if (send_len > 0) send_buf->send(next, slot, offsets[sb], send_len);
      if (recv_len > 0) {
        WaitRecv(recv_buf.get(), timeout);
        unsigned char* dst = scratch.data() + offsets[rb];
        fn(dst, dst, incoming.data(), recv_len / elem);
      }
      if (send_len > 0) WaitSend(send_buf.get(), timeout);
    }
  }));
  if (mine > 0) std::memcpy(out, scratch.data() + offsets[rank_], mine);
  return Status::OK();
}

Status GlooComm::SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                          int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return Status::Invalid("Gloo sendrecv: peer " + std::to_string(peer) +
                           " is not another rank of " + std::to_string(size_));
  }
  const uint64_t slot = gloo::Slot::build(kHvdSendRecvSlotPrefix, 0);
  const auto timeout = shared_->timeout;
  return Run("sendrecv", [&] {
    // Zero sizes are skipped on both ends: each side knows the other's.
    auto send_buf = context_->createUnboundBuffer(Mutable(send), static_cast<size_t>(send_bytes));
    auto recv_buf = context_->createUnboundBuffer(Mutable(recv), static_cast<size_t>(recv_bytes));
    if (recv_bytes > 0) recv_buf->recv(peer, slot);
    if (send_bytes > 0) send_buf->send(peer, slot);
    if (recv_bytes > 0) WaitRecv(recv_buf.get(), timeout);
    if (send_bytes > 0) WaitSend(send_buf.get(), timeout);
  });
}

Status GlooComm::Barrier() {
  if (size_ == 1) return Status::OK();
  return Run("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(shared_->op_timeout);
    gloo::barrier(opts);
  });
}

Status GlooComm::Split(const std::vector<int>& ranks, const std::string& tag,
                       std::unique_ptr<Comm>* out) {
  int new_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_ || (i > 0 && ranks[i] <= ranks[i - 1])) {
      return Status::Invalid("Gloo split: ranks must be ascending and within [0, " +
                             std::to_string(size_) + ")");
    }
    if (ranks[i] == rank_) new_rank = static_cast<int>(i);
  }
  if (new_rank < 0) {
    return Status::Invalid("Gloo split: rank " + std::to_string(rank_) +
                           " is not a member of the new group");
  }
  if (!broken_.ok()) return Run("split", [] {});
  // Members meet under a store prefix derived from the parent's and the tag,
  // so nested splits and re-inits never reuse keys.
  std::unique_ptr<GlooComm> comm;
  // Errors in the subgroup should name world ranks, the ones users know.
  const int world_rank = peers_.empty() ? rank_ : peers_[rank_].rank;
  HVD_RETURN_IF_ERROR(Create(shared_, prefix_ + "/split/" + tag, new_rank,
                             static_cast<int>(ranks.size()), world_rank, &comm));
  *out = std::move(comm);
  return Status::OK();
}

Status GlooComm::OpenControlChannel(const ControlChannelOptions& options,
                                    std::unique_ptr<ControlChannel>* out) {
  HVD_RETURN_IF_ERROR(broken_);
  return TcpChannel::Create(this, shared_->control_host, options.timeout_s, out);
}

}  // namespace hvd
