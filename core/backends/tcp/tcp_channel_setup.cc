// TcpChannel's set-up: rank 0 listens and announces its address and a
// token over the set's Comm, the members connect and present the token, and
// then every rank agrees over the Comm whether all of them got through, so
// that a member that cannot reach the coordinator fails the set-up on every
// rank at once instead of leaving the coordinator waiting.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "core/backends/tcp/tcp_channel.h"
#include "core/common/wire.h"

namespace hvd {

using rendezvous::Deadline;
using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

namespace {

constexpr uint32_t kHelloMagic = 0x48564443;  // "HVDC"
constexpr size_t kTokenBytes = 16;

std::string RandomToken() {
  std::random_device rd;  // /dev/urandom: the token only needs to be unguessable
  std::string t(kTokenBytes, '\0');
  for (auto& c : t) c = static_cast<char>(rd() & 0xff);
  return t;
}

Status Listen(const std::string& host, UniqueFd* out, int* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), "0", &hints, &res);
  if (rc != 0) return Status::Invalid("cannot resolve '" + host + "': " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  UniqueFd fd(::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol));
  if (!fd.valid()) return Status::Backend("socket: " + ErrnoString(errno));
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd.get(), 1024) != 0) {
    return Status::Backend("cannot listen on " + host + ": " + ErrnoString(errno));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  *port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                        : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  *out = std::move(fd);
  return Status::OK();
}

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
      char hello[4 + 4 + kTokenBytes];
      if (!rendezvous::RecvAll(fd.get(), hello, sizeof(hello), Deadline::After(2)).ok()) continue;
      WireReader rd(hello, sizeof(hello));
      int32_t magic = 0, rank = -1;
      rd.I32(&magic);
      rd.I32(&rank);
      const bool valid = static_cast<uint32_t>(magic) == kHelloMagic && rank > 0 &&
                         static_cast<size_t>(rank) < links_.size() &&
                         std::memcmp(hello + 8, token.data(), kTokenBytes) == 0 &&
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
  const size_t colon = where.rfind(':');
  if (colon == std::string::npos) return Status::Internal("control channel: bad address " + where);
  std::string host = where.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  HVD_RETURN_IF_ERROR(rendezvous::ConnectTcp(host, std::atoi(where.c_str() + colon + 1), deadline,
                                             out,
                                             /*retry_refused=*/false));  // rank 0 listens already
  WireWriter w;
  w.I32(static_cast<int32_t>(kHelloMagic));
  w.I32(rank);
  std::string hello = w.Take() + token;
  HVD_RETURN_IF_ERROR(rendezvous::SendAll(out->get(), hello.data(), hello.size(), deadline));
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
    int port = 0;
    mine = Listen(bind_host, &listener, &port);
    const std::string host =
        bind_host.find(':') != std::string::npos ? "[" + bind_host + "]" : bind_host;
    if (mine.ok()) announce = RandomToken() + host + ":" + std::to_string(port);
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
  HVD_RETURN_IF_ERROR(comm->Allreduce(&reached, 1, DataType::kInt32, ReduceOp::kMin));
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
