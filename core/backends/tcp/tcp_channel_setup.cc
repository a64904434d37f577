// TcpChannel's set-up: rank 0 listens and announces its address and a
// token over the set's Comm, the members connect and present the token, and
// then every rank agrees over the Comm whether all of them got through, so
// that a member that cannot reach the coordinator fails the set-up on every
// rank at once instead of leaving the coordinator waiting.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/backends/tcp/tcp_channel.h"
#include "core/backends/tcp/tcp_link.h"

namespace hvd {

using rendezvous::Deadline;
using rendezvous::UniqueFd;

namespace {

constexpr uint32_t kHelloMagic = 0x48564443;  // "HVDC"

// Rank 0's side, on a thread of its own while rank 0 joins the verdict:
// accepts until every member has shown the token, the deadline passes or
// Finish is called. Each member is answered at once; a connection with a
// wrong token or garbage is dropped, not fatal.
class Acceptor {
 public:
  Acceptor(int listen_fd, int size, std::string token, Deadline deadline)
      : links_(static_cast<size_t>(size)) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      stop_read_ = UniqueFd(p[0]);
      stop_write_ = UniqueFd(p[1]);
    }
    thread_ = std::thread([this, listen_fd, token, deadline] { Run(listen_fd, token, deadline); });
  }
  ~Acceptor() { Finish(); }
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Stops accepting; afterwards links() holds the members that got through.
  void Finish() {
    if (!thread_.joinable()) return;
    const char c = 0;
    if (stop_write_.valid()) (void)!::write(stop_write_.get(), &c, 1);
    thread_.join();
  }
  std::vector<UniqueFd>& links() { return links_; }

 private:
  void Run(int listen_fd, const std::string& token, Deadline deadline) {
    size_t missing = links_.size() - 1;
    while (missing > 0) {
      pollfd p[2] = {{listen_fd, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      const int r = ::poll(p, stop_read_.valid() ? 2 : 1, deadline.PollTimeoutMs());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0 || (p[1].revents & POLLIN)) return;
      UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) continue;
      int32_t rank = -1;
      const bool valid = ReadHello(fd.get(), kHelloMagic, token, Deadline::After(2), &rank) &&
                         rank > 0 && static_cast<size_t>(rank) < links_.size() &&
                         !links_[static_cast<size_t>(rank)].valid();
      const char ok = 1;
      if (!valid || !rendezvous::SendAll(fd.get(), &ok, 1, Deadline::After(2)).ok()) continue;
      links_[static_cast<size_t>(rank)] = std::move(fd);
      --missing;
    }
  }

  std::vector<UniqueFd> links_;  // by rank; written by the thread until Finish
  UniqueFd stop_read_, stop_write_;
  std::thread thread_;
};

Status ConnectToCoordinator(const std::string& where, int rank, const std::string& token,
                            Deadline deadline, UniqueFd* out) {
  HVD_RETURN_IF_ERROR(ConnectAndGreet(where, Hello(kHelloMagic, rank, token), deadline, out));
  char ok = 0;
  return rendezvous::RecvAll(out->get(), &ok, 1, deadline);
}

std::string MissingRanks(const std::vector<UniqueFd>& links) {
  std::string s;
  for (size_t r = 1; r < links.size(); ++r) {
    if (!links[r].valid()) s += (s.empty() ? "" : ", ") + std::to_string(r);
  }
  return s;
}

}  // namespace

Status TcpChannel::Create(Comm* comm, const std::string& bind_host, double timeout_s,
                          std::unique_ptr<ControlChannel>* out, bool* unreachable) {
  if (unreachable) *unreachable = false;
  const int rank = comm->rank(), size = comm->size();
  if (size == 1) {
    *out = std::make_unique<TcpChannel>(0, 1, std::vector<UniqueFd>(), "this rank (alone)");
    return Status::OK();
  }
  const Deadline deadline = Deadline::After(timeout_s);
  Status mine;           // this rank's part: listening (rank 0) or reaching rank 0
  std::string announce;  // rank 0's token + "host:port"; empty if it could not listen
  UniqueFd listener;
  if (rank == 0) {
    std::string where;
    mine = ListenTcp(bind_host, &listener, &where);
    if (mine.ok()) announce = RandomToken(kTokenBytes) + where;
  }
  HVD_RETURN_IF_ERROR(BroadcastBytes(*comm, &announce, 0));
  if (announce.size() <= kTokenBytes) {
    if (unreachable) *unreachable = true;
    return Status::Backend("control channel: the coordinator (rank 0) cannot listen" +
                           (mine.ok() ? std::string() : ": " + mine.message()));
  }
  const std::string token = announce.substr(0, kTokenBytes);
  const std::string where = announce.substr(kTokenBytes);
  std::vector<UniqueFd> links(static_cast<size_t>(size));
  std::unique_ptr<Acceptor> acceptor;
  if (rank == 0) {
    acceptor = std::make_unique<Acceptor>(listener.get(), size, token, deadline);
  } else {
    mine = ConnectToCoordinator(where, rank, token, deadline, &links[0]);
  }
  int32_t reached = mine.ok() ? 1 : 0;
  HVD_RETURN_IF_ERROR(comm->Allreduce({&reached, 1, DataType::kInt32, ReduceOp::kMin}));
  if (acceptor) {
    acceptor->Finish();  // at once when everyone got through: all were answered
    links.swap(acceptor->links());
  }
  if (!reached) {
    if (unreachable) *unreachable = true;
    if (rank == 0) {
      return Status::Backend("control channel: rank(s) " + MissingRanks(links) +
                             " could not reach the coordinator (rank 0) at " + where);
    }
    return Status::Backend(
        "control channel: " +
        (mine.ok() ? "another rank could not reach the coordinator at " + where
                   : "cannot reach the coordinator (rank 0) at " + where + ": " + mine.message()));
  }
  for (auto& fd : links) {
    if (!fd.valid()) continue;
    HVD_RETURN_IF_ERROR(rendezvous::SetNonBlocking(fd.get()));
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  *out = std::make_unique<TcpChannel>(rank, size, std::move(links), where);
  return Status::OK();
}

}  // namespace hvd
