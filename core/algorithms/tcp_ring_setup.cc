// TcpRing's set-up: every member listens, the addresses and tokens travel
// over the set's Comm, each member connects to its right neighbour and
// accepts its left one, and all agree over the Comm whether every link
// came up, so that a member that cannot reach its neighbour fails the
// set-up everywhere at once instead of leaving the neighbour waiting.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "core/algorithms/tcp_ring.h"
#include "core/backends/tcp/tcp_link.h"

namespace hvd {

using rendezvous::Deadline;
using rendezvous::UniqueFd;

namespace {

constexpr uint32_t kHelloMagic = 0x48564452;  // "HVDR"

// Accepts connections on `listener` until one shows `token` and comes from
// comm rank `left`; others are dropped.
Status AcceptLeft(int listener, int left, const std::string& token, Deadline deadline,
                  UniqueFd* out) {
  while (true) {
    pollfd p{listener, POLLIN, 0};
    const int r = ::poll(&p, 1, deadline.PollTimeoutMs());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Timeout("no connection from it within the timeout");
    UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    int32_t rank = -1;
    if (ReadHello(fd.get(), kHelloMagic, token, deadline, &rank) && rank == left) {
      *out = std::move(fd);
      return Status::OK();
    }
  }
}

}  // namespace

Status TcpRing::Create(Comm* comm, const std::string& bind_host, double timeout_s,
                       const std::vector<std::string>& names, std::unique_ptr<TcpRing>* out) {
  const int rank = comm->rank(), size = comm->size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const Deadline deadline = Deadline::After(timeout_s);
  UniqueFd listener, right_fd, left_fd;
  std::string where, announce;  // announce: token + where; empty if I cannot listen
  Status mine = size == 1 ? Status::OK() : ListenTcp(bind_host, &listener, &where);
  const std::string token = RandomToken(kTokenBytes);
  if (size > 1 && mine.ok()) announce = token + where;
  std::vector<std::string> all;
  HVD_RETURN_IF_ERROR(AllgatherBytes(*comm, announce, &all));
  auto name = [&](int r) { return RingMemberName(names, r); };
  if (!mine.ok()) {
    mine = Status::Backend("cannot listen: " + mine.message());
  } else if (size > 1) {
    const std::string& theirs = all[static_cast<size_t>(right)];
    mine = theirs.size() <= kTokenBytes
               ? Status::Backend(name(right) + " could not listen")
               : ConnectAndGreet(theirs.substr(kTokenBytes),
                                 Hello(kHelloMagic, rank, theirs.substr(0, kTokenBytes)), deadline,
                                 &right_fd);
    if (!mine.ok() && theirs.size() > kTokenBytes) {
      mine = Status::Backend("cannot reach " + name(right) + " at " + theirs.substr(kTokenBytes) +
                             ": " + mine.message());
    }
    // Every member connects before it accepts: the kernel completes the
    // handshakes meanwhile, so nobody waits on a neighbour's accept.
    if (mine.ok() && all[static_cast<size_t>(left)].size() > kTokenBytes) {
      mine = AcceptLeft(listener.get(), left, token, deadline, &left_fd);
      if (!mine.ok()) mine = Status::Backend(name(left) + " did not connect: " + mine.message());
    }
  }
  int32_t ok = mine.ok() ? 1 : 0;
  HVD_RETURN_IF_ERROR(comm->Allreduce({&ok, 1, DataType::kInt32, ReduceOp::kMin}));
  if (!ok) {
    return Status::Backend("cross-host ring: " +
                           (mine.ok() ? std::string("another member could not connect")
                                      : name(rank) + ": " + mine.message()));
  }
  for (const UniqueFd* fd : {&right_fd, &left_fd}) {
    if (!fd->valid()) continue;
    HVD_RETURN_IF_ERROR(rendezvous::SetNonBlocking(fd->get()));
    int one = 1;
    setsockopt(fd->get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  *out = std::make_unique<TcpRing>(rank, size, std::move(right_fd), std::move(left_fd), timeout_s,
                                   names);
  return Status::OK();
}

}  // namespace hvd
