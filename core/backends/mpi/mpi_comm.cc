#include "core/backends/mpi/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <thread>

#include "core/backends/mpi/mpi_channel.h"
#include "core/backends/mpi/mpi_tcp_defaults.h"
#include "core/backends/registry.h"
#include "core/backends/tcp/tcp_channel.h"
#include "core/common/host_buffer.h"
#include "core/common/logging.h"

namespace hvd {
namespace {

bool FitsInt(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

Status TooLarge(const char* what) {
  return Status::Unsupported(std::string("MPI ") + what +
                             ": a per-rank size exceeds 2^31-1 bytes, which MPI's int counts "
                             "cannot express; split the tensor");
}

}  // namespace

MpiComm::MpiComm(MPI_Comm comm, int64_t chunk_bytes) : comm_(comm), chunk_bytes_(chunk_bytes) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Status MpiComm::Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::Backend(std::string("MPI ") + what + " failed: " + std::string(msg, len));
}

CommCaps MpiComm::caps() const {
  CommCaps c;
  c.fusion_solo_bytes = chunk_bytes_ / 4;
  c.stages_per_piece = true;
  return c;
}

Status MpiComm::DoAllreduce(const AllreduceOptions& a) {
  if (quiet_) {
    return AllreduceInPieces(a, 0, [&](int64_t, int64_t) {
      return quiet_->Run(comm_, a.in, a.out, a.count, a.dt, a.op);
    });
  }
  const MPI_Datatype type = ToMpiType(a.dt);
  const MPI_Op mop = ToMpiOp(a.dt, a.op);
  const int64_t esize = static_cast<int64_t>(DataTypeSize(a.dt));
  // Open MPI's shared-memory allreduce is much faster on messages that fit
  // in cache (docs/benchmarks.md), so large buffers go in chunks, each
  // drained (scaled) while it is still in cache; MPI's int counts need
  // pieces below 2^31 elements anyway.
  int64_t max_count = int64_t{1} << 30;
  if (chunk_bytes_ > 0) max_count = std::max<int64_t>(1, std::min(max_count, chunk_bytes_ / esize));
  return AllreduceInPieces(a, max_count, [&](int64_t done, int64_t n) {
    if (n <= 0) return Status::OK();
    const void* src =
        a.in == a.out ? MPI_IN_PLACE : static_cast<const uint8_t*>(a.in) + done * esize;
    return Check(MPI_Allreduce(src, static_cast<uint8_t*>(a.out) + done * esize,
                               static_cast<int>(n), type, mop, comm_),
                 "Allreduce");
  });
}

Status MpiComm::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) {
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  int64_t off = 0;
  for (int r = 0; r < size_; ++r) {
    if (!FitsInt(bytes_per_rank[r]) || !FitsInt(off)) return TooLarge("allgatherv");
    counts[r] = static_cast<int>(bytes_per_rank[r]);
    displs[r] = static_cast<int>(off);
    off += bytes_per_rank[r];
  }
  return Check(MPI_Allgatherv(in, counts[rank_], MPI_BYTE, out, counts.data(), displs.data(),
                              MPI_BYTE, comm_),
               "Allgatherv");
}

Status MpiComm::Broadcast(void* buf, int64_t bytes, int root) {
  auto* p = static_cast<uint8_t*>(buf);
  constexpr int64_t kMax = 1 << 30;
  for (int64_t done = 0; done < bytes; done += kMax) {
    const int n = static_cast<int>(std::min(kMax, bytes - done));
    HVD_RETURN_IF_ERROR(Check(MPI_Bcast(p + done, n, MPI_BYTE, root, comm_), "Bcast"));
  }
  return Status::OK();
}

Status MpiComm::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                          const std::vector<int64_t>& recv_bytes) {
  std::vector<int> sc(static_cast<size_t>(size_)), sd(sc.size()), rc(sc.size()), rd(sc.size());
  int64_t so = 0, ro = 0;
  for (int r = 0; r < size_; ++r) {
    if (!FitsInt(send_bytes[r]) || !FitsInt(recv_bytes[r]) || !FitsInt(so) || !FitsInt(ro)) {
      return TooLarge("alltoallv");
    }
    sc[r] = static_cast<int>(send_bytes[r]);
    sd[r] = static_cast<int>(so);
    rc[r] = static_cast<int>(recv_bytes[r]);
    rd[r] = static_cast<int>(ro);
    so += send_bytes[r];
    ro += recv_bytes[r];
  }
  return Check(
      MPI_Alltoallv(in, sc.data(), sd.data(), MPI_BYTE, out, rc.data(), rd.data(), MPI_BYTE, comm_),
      "Alltoallv");
}

// Above chunk_bytes_ in rounds of q elements of every block, packed into a
// staging buffer: Open MPI's reduce_scatter allocates a temporary as large
// as its input on every call, fresh pages each time for large inputs, whose
// page faults then cost many times the reduction itself.
Status MpiComm::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                              DataType dt, ReduceOp op) {
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  int64_t total = 0, longest = 0;
  for (int64_t c : counts) {
    total += c;
    longest = std::max(longest, c);
  }
  int64_t q = longest;
  if (chunk_bytes_ > 0 && total * esize > chunk_bytes_) {
    q = std::max<int64_t>(1, chunk_bytes_ / esize / size_);
  }
  if (q >= longest) {  // one call, no staging
    std::vector<int> c(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (!FitsInt(counts[r])) return TooLarge("reduce_scatter");
      c[r] = static_cast<int>(counts[r]);
    }
    return Check(MPI_Reduce_scatter(in, out, c.data(), ToMpiType(dt), ToMpiOp(dt, op), comm_),
                 "Reduce_scatter");
  }
  std::vector<int64_t> start(static_cast<size_t>(size_), 0);
  for (int r = 1; r < size_; ++r) start[r] = start[r - 1] + counts[r - 1];
  HostBuffer staging(static_cast<size_t>(q * size_ * esize));
  std::vector<int> c(static_cast<size_t>(size_));
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t done = 0; done < longest; done += q) {
    uint8_t* p = staging.data();
    for (int r = 0; r < size_; ++r) {
      const int64_t n = std::max<int64_t>(0, std::min(q, counts[r] - done));
      if (n > 0) std::memcpy(p, src + (start[r] + done) * esize, static_cast<size_t>(n * esize));
      p += n * esize;
      c[r] = static_cast<int>(n);
    }
    HVD_RETURN_IF_ERROR(Check(MPI_Reduce_scatter(staging.data(), dst + done * esize, c.data(),
                                                 ToMpiType(dt), ToMpiOp(dt, op), comm_),
                              "Reduce_scatter"));
  }
  return Status::OK();
}

Status MpiComm::Barrier() {
  return Check(MPI_Barrier(comm_), "Barrier");
}

void MpiComm::Progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

Status MpiComm::SendRecv(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes,
                         int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return Status::Invalid("MPI sendrecv: peer " + std::to_string(peer) +
                           " is not another rank of " + std::to_string(size_));
  }
  // In pieces below 2^31 bytes (MPI's int counts); both sides cut alike.
  constexpr int64_t kMax = int64_t{1} << 30;
  constexpr int kTag = 0x4144;  // 'AD'; the communicator is hvd's own duplicate
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  int64_t done = 0;
  do {
    const int ns = static_cast<int>(std::max<int64_t>(0, std::min(kMax, send_bytes - done)));
    const int nr = static_cast<int>(std::max<int64_t>(0, std::min(kMax, recv_bytes - done)));
    HVD_RETURN_IF_ERROR(Check(
        MPI_Sendrecv(ns ? in + done : nullptr, ns, MPI_BYTE, peer, kTag, nr ? out + done : nullptr,
                     nr, MPI_BYTE, peer, kTag, comm_, MPI_STATUS_IGNORE),
        "Sendrecv"));
    done += kMax;
  } while (done < std::max(send_bytes, recv_bytes));
  return Status::OK();
}

Status MpiComm::Split(const std::vector<int>& ranks, const std::string& tag,
                      std::unique_ptr<Comm>* out) {
  MPI_Group world, sub;
  HVD_RETURN_IF_ERROR(Check(MPI_Comm_group(comm_, &world), "Comm_group"));
  int rc = MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &sub);
  MPI_Group_free(&world);
  HVD_RETURN_IF_ERROR(Check(rc, "Group_incl"));
  MPI_Comm newcomm = MPI_COMM_NULL;
  const int mpi_tag = static_cast<int>(std::hash<std::string>()(tag) & 0x7fff);
  rc = MPI_Comm_create_group(comm_, sub, mpi_tag, &newcomm);
  MPI_Group_free(&sub);
  HVD_RETURN_IF_ERROR(Check(rc, "Comm_create_group"));
  *out = std::make_unique<MpiComm>(newcomm, chunk_bytes_);
  return Status::OK();
}

void MpiComm::Tune(const CommTuning& tuning) {
  if (tuning.allreduce_chunk_bytes) chunk_bytes_ = *tuning.allreduce_chunk_bytes;
  if (!tuning.quiet_allreduce || quiet_) return;
  const MpiQuietAllreduceMaker make = MpiQuietAllreduce();
  if (make) {
    quiet_ = make(rank_);
  } else if (rank_ == 0) {
    HVD_LOG(kWarning) << "MPI: no quiet allreduce is registered; the cross-host step runs on "
                         "MPI_Allreduce";
  }
}

namespace {
MpiQuietAllreduceMaker& QuietMaker() {
  static MpiQuietAllreduceMaker maker = nullptr;
  return maker;
}
}  // namespace

bool RegisterMpiQuietAllreduce(MpiQuietAllreduceMaker maker) {
  QuietMaker() = maker;
  return true;
}

MpiQuietAllreduceMaker MpiQuietAllreduce() {
  return QuietMaker();
}

Status MpiComm::OpenControlChannel(const ControlChannelOptions& options,
                                   std::unique_ptr<ControlChannel>* out) {
  if (options.transport != ControlChannelChoice::kBackend) {
    // Sockets wake the background thread the moment a message arrives; MPI
    // messages must be polled, which adds latency to every small allreduce
    // and grows with the hosts (docs/scaling.md). By default a member that cannot reach
    // the coordinator soon is not worth waiting for: every rank falls back.
    const bool forced = options.transport == ControlChannelChoice::kTcp;
    const double timeout = forced ? options.timeout_s : std::min(options.timeout_s, 10.0);
    bool unreachable = false;
    const Status s = TcpChannel::Create(this, options.host, timeout, out, &unreachable);
    if (s.ok() || forced || !unreachable) return s;
    if (rank_ == 0) {
      HVD_LOG(kWarning) << s.message()
                        << "; negotiating over MPI messages instead, which the background thread "
                           "polls (set HVD_GLOO_IFACE to an interface every host reaches, or "
                           "HVD_CONTROL_CHANNEL=mpi to skip the attempt)";
    }
  }
  MPI_Comm dup = MPI_COMM_NULL;
  HVD_RETURN_IF_ERROR(Check(MPI_Comm_dup(comm_, &dup), "Comm_dup (control channel)"));
  return MpiChannel::Create(dup, /*try_wake=*/true, out);
}

}  // namespace hvd
