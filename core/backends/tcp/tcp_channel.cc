#include "core/backends/tcp/tcp_channel.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "core/common/wire.h"

namespace hvd {

using rendezvous::Deadline;
using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

namespace {

constexpr uint32_t kHelloMagic = 0x48564443;  // "HVDC"
constexpr size_t kTokenBytes = 16;
constexpr uint32_t kMaxFrame = 1u << 30;

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

// Coordinator: accepts until every member has proved itself (a connection
// with a wrong token or garbage is dropped, not fatal).
Status AcceptMembers(int listen_fd, int size, const std::string& token, Deadline deadline,
                     std::vector<UniqueFd>* links) {
  int missing = size - 1;
  while (missing > 0) {
    pollfd p{listen_fd, POLLIN, 0};
    const int r = ::poll(&p, 1, deadline.PollTimeoutMs());
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      return Status::Timeout("control channel: " + std::to_string(missing) +
                             " member(s) did not connect to the coordinator in time");
    }
    UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    char hello[4 + 4 + kTokenBytes];
    if (!rendezvous::RecvAll(fd.get(), hello, sizeof(hello), Deadline::After(2)).ok()) continue;
    WireReader rd(hello, sizeof(hello));
    int32_t magic = 0, rank = -1;
    rd.I32(&magic);
    rd.I32(&rank);
    const bool valid = static_cast<uint32_t>(magic) == kHelloMagic && rank > 0 && rank < size &&
                       std::memcmp(hello + 8, token.data(), kTokenBytes) == 0 &&
                       !(*links)[static_cast<size_t>(rank)].valid();
    if (!valid) continue;
    (*links)[static_cast<size_t>(rank)] = std::move(fd);
    --missing;
  }
  // Everyone is in: release them together.
  for (int r = 1; r < size; ++r) {
    const char ok = 1;
    HVD_RETURN_IF_ERROR(rendezvous::SendAll((*links)[r].get(), &ok, 1, deadline));
  }
  return Status::OK();
}

Status ConnectToCoordinator(const std::string& where, int rank, const std::string& token,
                            Deadline deadline, UniqueFd* out) {
  const size_t colon = where.rfind(':');
  if (colon == std::string::npos) return Status::Internal("control channel: bad address " + where);
  std::string host = where.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  HVD_RETURN_IF_ERROR(
      rendezvous::ConnectTcp(host, std::atoi(where.c_str() + colon + 1), deadline, out));
  WireWriter w;
  w.I32(static_cast<int32_t>(kHelloMagic));
  w.I32(rank);
  std::string hello = w.Take() + token;
  HVD_RETURN_IF_ERROR(rendezvous::SendAll(out->get(), hello.data(), hello.size(), deadline));
  char ok = 0;
  return rendezvous::RecvAll(out->get(), &ok, 1, deadline);
}

}  // namespace

Status TcpChannel::Create(Comm* comm, const std::string& bind_host, double timeout_s,
                          std::unique_ptr<ControlChannel>* out) {
  const int rank = comm->rank(), size = comm->size();
  std::vector<UniqueFd> links(static_cast<size_t>(size));
  const Deadline deadline = Deadline::After(timeout_s);
  UniqueFd listener;
  std::string announce;  // rank 0: "host:port" + token; empty if it could not listen
  if (rank == 0 && size > 1) {
    int port = 0;
    Status s = Listen(bind_host, &listener, &port);
    const std::string host =
        bind_host.find(':') != std::string::npos ? "[" + bind_host + "]" : bind_host;
    if (s.ok()) announce = RandomToken() + host + ":" + std::to_string(port);
    // The others learn of a failure from the empty announcement.
    HVD_RETURN_IF_ERROR(BroadcastBytes(*comm, &announce, 0));
    HVD_RETURN_IF_ERROR(s);
    HVD_RETURN_IF_ERROR(
        AcceptMembers(listener.get(), size, announce.substr(0, kTokenBytes), deadline, &links));
  } else if (size > 1) {
    HVD_RETURN_IF_ERROR(BroadcastBytes(*comm, &announce, 0));
    if (announce.size() <= kTokenBytes) {
      return Status::Backend("control channel: the coordinator (rank 0) could not listen");
    }
    HVD_RETURN_IF_ERROR(ConnectToCoordinator(announce.substr(kTokenBytes), rank,
                                             announce.substr(0, kTokenBytes), deadline, &links[0]));
  }
  for (auto& fd : links) {
    if (!fd.valid()) continue;
    HVD_RETURN_IF_ERROR(rendezvous::SetNonBlocking(fd.get()));
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  *out = std::make_unique<TcpChannel>(rank, size, std::move(links));
  return Status::OK();
}

TcpChannel::TcpChannel(int rank, int size, std::vector<UniqueFd> sockets)
    : rank_(rank), size_(size), links_(static_cast<size_t>(size)) {
  for (size_t i = 0; i < sockets.size() && i < links_.size(); ++i) {
    links_[i].fd = std::move(sockets[i]);
  }
}

TcpChannel::~TcpChannel() {
  // Say we are done, then let what the peer still sends drain until it
  // closes too (bounded): closing with unread data would reset the
  // connection and could destroy frames the peer has not read yet.
  std::vector<pollfd> open;
  for (auto& l : links_) {
    if (!l.fd.valid()) continue;
    ::shutdown(l.fd.get(), SHUT_WR);
    open.push_back({l.fd.get(), POLLIN, 0});
  }
  const Deadline deadline = Deadline::After(1.0);
  char sink[4096];
  while (!open.empty() && !deadline.Expired()) {
    if (::poll(open.data(), open.size(), deadline.PollTimeoutMs()) <= 0) break;
    for (size_t i = 0; i < open.size();) {
      const ssize_t n = open[i].revents ? ::recv(open[i].fd, sink, sizeof(sink), 0) : 1;
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        open.erase(open.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
}

Status TcpChannel::Lose(int peer, const std::string& why) {
  Link& l = links_[static_cast<size_t>(peer)];
  if (l.lost.ok()) {
    // "rank 1 (host h)" -> "rank 1 (host h, 10.0.0.2:4711)": the address
    // tells apart ranks on hosts that share a name.
    std::string who = PeerName(peer);
    const std::string addr = rendezvous::PeerAddress(l.fd.get());
    if (!who.empty() && who.back() == ')') {
      who.insert(who.size() - 1, ", " + addr);
    } else {
      who += " (" + addr + ")";
    }
    l.lost = Status::PeerLost("control connection to " + who + " lost: " + why);
  }
  return l.lost;
}

Status TcpChannel::Send(int peer, std::string bytes) {
  if (peer < 0 || peer >= size_)
    return Status::Internal("control channel: no rank " + std::to_string(peer));
  Link& l = links_[static_cast<size_t>(peer)];
  if (!l.lost.ok()) return l.lost;
  if (!l.fd.valid()) {
    return Status::Internal("control channel: no link from rank " + std::to_string(rank_) +
                            " to rank " + std::to_string(peer));
  }
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  l.out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  l.out.append(bytes);
  return Flush(peer);
}

Status TcpChannel::Flush(int peer) {
  Link& l = links_[static_cast<size_t>(peer)];
  while (l.out_pos < l.out.size()) {
    const ssize_t n =
        ::send(l.fd.get(), l.out.data() + l.out_pos, l.out.size() - l.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      l.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::OK();
    return Lose(peer, ErrnoString(errno));
  }
  l.out.clear();
  l.out_pos = 0;
  return Status::OK();
}

Status TcpChannel::Fill(int peer, std::vector<ChannelMessage>* out) {
  Link& l = links_[static_cast<size_t>(peer)];
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(l.fd.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      l.in.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n == 0) return Lose(peer, "connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return Lose(peer, ErrnoString(errno));
  }
  size_t pos = 0;
  while (l.in.size() - pos >= sizeof(uint32_t)) {
    uint32_t n;
    std::memcpy(&n, l.in.data() + pos, sizeof(n));
    if (n > kMaxFrame) return Lose(peer, "malformed frame of " + std::to_string(n) + " bytes");
    if (l.in.size() - pos - sizeof(n) < n) break;
    out->push_back({peer, l.in.substr(pos + sizeof(n), n)});
    pos += sizeof(n) + n;
  }
  l.in.erase(0, pos);
  return Status::OK();
}

Status TcpChannel::Receive(std::vector<ChannelMessage>* out) {
  for (int peer = 0; peer < size_; ++peer) {
    Link& l = links_[static_cast<size_t>(peer)];
    if (!l.fd.valid() || !l.lost.ok()) continue;
    Status s = Flush(peer);
    if (s.ok()) s = Fill(peer, out);
    if (!s.ok()) {
      // Reported once; the descriptor goes so poll() stops waking for it.
      out->push_back({peer, s.message(), true});
      l.fd.Reset();
    }
  }
  return Status::OK();
}

void TcpChannel::PollFds(std::vector<PollFd>* out) const {
  for (const auto& l : links_) {
    if (l.fd.valid() && l.lost.ok()) out->push_back({l.fd.get(), l.out_pos < l.out.size()});
  }
}

}  // namespace hvd
