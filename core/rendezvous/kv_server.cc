#include "core/rendezvous/kv_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace rendezvous {

namespace {

// An unauthenticated peer gets this long to finish the handshake, so idle
// scanners cannot hold connections forever.
constexpr double kHandshakeSeconds = 10.0;
// Bound on open connections: the store serves one job, a few per rank. It is
// lowered to fit RLIMIT_NOFILE, leaving kReservedFds to the rest of hvdrun.
constexpr size_t kMaxConnections = 8192;
constexpr size_t kReservedFds = 64;
// When no connection can be shed, accepting pauses this long instead of
// spinning on a listening socket that stays readable.
constexpr double kAcceptPauseSeconds = 0.1;
// Accepts per turn of the loop, so a flood of connections cannot starve the
// ranks already connected.
constexpr int kMaxAcceptsPerTurn = 256;
constexpr size_t kReadChunk = 64 * 1024;
// Peers whose refusals are counted by address; more are counted together.
constexpr size_t kMaxLoggedPeers = 256;

size_t ConnectionLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kMaxConnections;
  const size_t fds = static_cast<size_t>(rl.rlim_cur);
  return fds <= 2 * kReservedFds ? kReservedFds : std::min(kMaxConnections, fds - kReservedFds);
}

// "10.0.0.9" of "10.0.0.9:51234", "[::1]" of "[::1]:51234".
std::string HostOf(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || peer.back() == ']' ? peer : peer.substr(0, colon);
}

// Refusals are logged once per peer address and summarised at Stop(): a
// scanner, or a stale job retrying with an old secret, would otherwise fill
// the launcher's output with a line per attempt. Memory is bounded by
// kMaxLoggedPeers and the fixed set of reasons.
class RefusalLog {
 public:
  void Record(const std::string& peer, const char* reason, const std::string& detail,
              bool refused) {
    const std::string host = HostOf(peer);
    auto it = peers_.find(host);
    if (it == peers_.end()) {
      if (peers_.size() >= kMaxLoggedPeers) {
        if (unlisted_++ == 0) {
          std::fprintf(stderr,
                       "hvd rendezvous: refusals from more than %zu addresses; the rest are "
                       "counted, not logged\n",
                       kMaxLoggedPeers);
        }
        return;
      }
      it = peers_.emplace(host, Counts()).first;
      std::fprintf(stderr,
                   "hvd rendezvous: %s %s: %s (further refusals from %s are counted and "
                   "summarised when the job ends)\n",
                   refused ? "refused connection from" : "closed connection from", peer.c_str(),
                   detail.c_str(), host.c_str());
    }
    ++it->second.total;
    ++it->second.by_reason[reason];
  }

  void PrintSummary() const {
    for (const auto& p : peers_) {
      if (p.second.total < 2) continue;  // its one line said it all
      std::string reasons;
      for (const auto& r : p.second.by_reason) {
        reasons += (reasons.empty() ? "" : ", ") + std::to_string(r.second) + " " + r.first;
      }
      std::fprintf(stderr, "hvd rendezvous: %s: %llu connections refused or closed in all (%s)\n",
                   p.first.c_str(), static_cast<unsigned long long>(p.second.total),
                   reasons.c_str());
    }
    if (unlisted_ > 0) {
      std::fprintf(stderr,
                   "hvd rendezvous: %llu more connections refused or closed from other addresses\n",
                   static_cast<unsigned long long>(unlisted_));
    }
  }

 private:
  struct Counts {
    uint64_t total = 0;
    std::map<std::string, uint64_t> by_reason;  // keys: the fixed reasons of Drop()
  };
  std::map<std::string, Counts> peers_;
  uint64_t unlisted_ = 0;
};

struct Conn {
  UniqueFd fd;
  std::string peer;
  std::string in;
  size_t in_offset = 0;
  std::string out;
  bool authenticated = false;
  bool closing = false;  // close once `out` is flushed
  std::string server_nonce;
  std::string session;
  uint64_t next_counter = 0;  // expected counter of the next request
  Deadline handshake_deadline;
  // A parked get/wait: at most one, since a client waits for each reply.
  bool pending = false;
  Message pending_msg;
  uint64_t pending_counter = 0;
  Deadline pending_deadline;
};

}  // namespace

struct KVServer::Impl {
  UniqueFd listen_fd;
  UniqueFd wake_read, wake_write;
  std::thread thread;
  std::atomic<bool> stop{false};
  int port = 0;
  std::string secret;
  std::map<std::string, std::string> store;
  // Keyed by accept order, so the first unauthenticated entry is the oldest.
  std::map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_serial = 0;
  size_t max_conns = kMaxConnections;
  Deadline accept_paused = Deadline::After(0);
  RefusalLog refusal_log;
  mutable std::mutex stats_mu;
  KVServerStats stats;

  void Run();
  // The descriptors to poll (wake pipe, listener, connections) and the
  // poll timeout in ms (-1: none) from the nearest deadline.
  int PollSet(std::vector<pollfd>* fds, std::vector<Conn*>* polled);
  void ExpireDeadlines();
  void ProcessParkedInput();
  void ReapClosed();
  void Accept();
  bool ShedOldestUnauthenticated();
  void OnReadable(Conn* c);
  void OnWritable(Conn* c);
  void ProcessInput(Conn* c);
  void HandleFrame(Conn* c, const std::string& body);
  void HandleRequest(Conn* c, uint64_t counter, const Message& req);
  bool TryComplete(Conn* c);  // answers a parked request if it can
  void Reply(Conn* c, uint64_t counter, const Message& reply);
  // reason: one of a few fixed phrases (the log counts by it); detail: the
  // line logged for the peer's first refusal.
  void Drop(Conn* c, const char* reason, const std::string& detail, bool refused);
  void WakeWaiters();
};

KVServer::KVServer() : impl_(std::make_unique<Impl>()) {}
KVServer::~KVServer() {
  Stop();
}

int KVServer::port() const {
  return impl_->port;
}

KVServerStats KVServer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats;
}

Status KVServer::Start(const std::string& bind_address, int port, const std::string& secret) {
  if (impl_->thread.joinable()) return Status::Invalid("rendezvous server already started");
  if (secret.empty()) return Status::Invalid("rendezvous server needs a non-empty secret");
  if (port < 0 || port > 65535) return Status::Invalid("invalid port " + std::to_string(port));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  const char* node = bind_address.empty() ? nullptr : bind_address.c_str();
  int rc = getaddrinfo(node, service.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::Invalid("cannot resolve bind address '" + bind_address +
                           "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
  UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::Backend("socket: " + ErrnoString(errno));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0) {
    return Status::Backend("cannot bind rendezvous server to " + bind_address + ":" + service +
                           ": " + ErrnoString(errno));
  }
  if (::listen(fd.get(), 1024) != 0) return Status::Backend("listen: " + ErrnoString(errno));
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  impl_->port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Backend("pipe: " + ErrnoString(errno));
  }
  impl_->wake_read.Reset(pipe_fds[0]);
  impl_->wake_write.Reset(pipe_fds[1]);
  impl_->listen_fd = std::move(fd);
  impl_->secret = secret;
  impl_->max_conns = ConnectionLimit();
  impl_->stop = false;
  impl_->thread = std::thread([this] { impl_->Run(); });
  return Status::OK();
}

void KVServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->stop = true;
  char b = 1;
  // The pipe is non-blocking; a full pipe already means "wake up".
  ssize_t ignored = ::write(impl_->wake_write.get(), &b, 1);
  (void)ignored;
  impl_->thread.join();
  impl_->refusal_log.PrintSummary();
  impl_->conns.clear();
  impl_->listen_fd.Reset();
  impl_->wake_read.Reset();
  impl_->wake_write.Reset();
}

void KVServer::Impl::Run() {
  std::vector<pollfd> fds;
  std::vector<Conn*> polled;
  while (!stop) {
    const int timeout = PollSet(&fds, &polled);
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) {
      std::fprintf(stderr, "hvd rendezvous: poll failed: %s\n", ErrnoString(errno).c_str());
      return;
    }
    if (stop) return;
    if (r > 0 && (fds[0].revents & POLLIN)) {
      char buf[64];
      while (::read(wake_read.get(), buf, sizeof(buf)) > 0) {
      }
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      Conn* c = polled[i];
      short rev = fds[i + 2].revents;
      if (rev & (POLLIN | POLLHUP | POLLERR)) OnReadable(c);
      if (!c->out.empty() && (rev & POLLOUT)) OnWritable(c);
    }
    ExpireDeadlines();
    ProcessParkedInput();
    ReapClosed();
    // Last, so that shedding may erase connections: `polled` is dead here.
    if (r > 0 && (fds[1].revents & POLLIN)) Accept();
  }
}

int KVServer::Impl::PollSet(std::vector<pollfd>* fds, std::vector<Conn*>* polled) {
  fds->clear();
  polled->clear();
  fds->push_back({wake_read.get(), POLLIN, 0});
  const bool accepting = accept_paused.Expired();
  fds->push_back({listen_fd.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
  int timeout = -1;
  auto merge = [&timeout](const Deadline& d) {
    int t = d.PollTimeoutMs();
    if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
  };
  if (!accepting) merge(accept_paused);
  for (auto& entry : conns) {
    Conn* c = entry.second.get();
    short events = 0;
    // A client waits for each reply, so while a request is parked there is
    // nothing to read; not polling gives natural back-pressure.
    if (!c->pending && !c->closing) events |= POLLIN;
    if (!c->out.empty()) events |= POLLOUT;
    fds->push_back({c->fd.get(), events, 0});
    polled->push_back(c);
    if (!c->authenticated) merge(c->handshake_deadline);
    if (c->pending) merge(c->pending_deadline);
  }
  return timeout;
}

// Handshakes that never finished, parked requests that expired.
void KVServer::Impl::ExpireDeadlines() {
  for (auto& entry : conns) {
    Conn* c = entry.second.get();
    if (!c->authenticated && !c->closing && c->handshake_deadline.Expired()) {
      Drop(c, "no authentication in time",
           "no authentication within " + std::to_string(static_cast<int>(kHandshakeSeconds)) + " s",
           true);
    } else if (c->pending && !TryComplete(c) && c->pending_deadline.Expired()) {
      Message reply;
      reply.type = MsgType::kTimeout;
      for (const auto& k : c->pending_msg.keys) {
        if (!store.count(k)) reply.keys.push_back(k);
      }
      c->pending = false;
      Reply(c, c->pending_counter, reply);
    }
  }
}

// Frames that arrived behind a request that was parked at the time.
void KVServer::Impl::ProcessParkedInput() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (auto& entry : conns) {
      Conn* c = entry.second.get();
      if (c->fd.valid() && !c->pending && c->in_offset < c->in.size()) {
        size_t before = c->in_offset + c->in.size();
        ProcessInput(c);
        progress |= c->fd.valid() && c->in_offset + c->in.size() != before;
      }
    }
  }
}

void KVServer::Impl::ReapClosed() {
  for (auto it = conns.begin(); it != conns.end();) {
    Conn* c = it->second.get();
    bool gone = !c->fd.valid() || (c->closing && c->out.empty());
    it = gone ? conns.erase(it) : std::next(it);
  }
}

// A full table (or process fd limit) must not lock the job out: idle
// unauthenticated connections (slowloris, scanners) are shed oldest first, and
// a real client authenticates within one round trip of its hello, so it is
// never the oldest for long. Only when every connection is authenticated does
// accepting pause.
void KVServer::Impl::Accept() {
  for (int accepted = 0; accepted < kMaxAcceptsPerTurn; ++accepted) {
    if (conns.size() >= max_conns && !ShedOldestUnauthenticated()) {
      accept_paused = Deadline::After(kAcceptPauseSeconds);
      return;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int raw = ::accept4(listen_fd.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                        SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (raw < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (ShedOldestUnauthenticated()) continue;
        accept_paused = Deadline::After(kAcceptPauseSeconds);
      }
      return;  // EAGAIN: nothing more to accept
    }
    auto c = std::make_unique<Conn>();
    c->fd.Reset(raw);
    int one = 1;
    setsockopt(raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->peer = PeerAddress(raw);
    c->handshake_deadline = Deadline::After(kHandshakeSeconds);
    if (!RandomBytes(kNonceBytes, &c->server_nonce).ok()) return;
    AppendFrame(EncodeHello(c->server_nonce), &c->out);
    {
      std::lock_guard<std::mutex> lock(stats_mu);
      ++stats.accepted;
    }
    Conn* ptr = c.get();
    conns[next_serial++] = std::move(c);
    OnWritable(ptr);
  }
}

bool KVServer::Impl::ShedOldestUnauthenticated() {
  for (auto it = conns.begin(); it != conns.end(); ++it) {
    Conn* c = it->second.get();
    if (c->authenticated || !c->fd.valid()) continue;
    Drop(c, "shed to make room",
         "not authenticated yet, shed to make room for new connections (" +
             std::to_string(conns.size()) + " open)",
         true);
    conns.erase(it);
    return true;
  }
  return false;
}

void KVServer::Impl::OnReadable(Conn* c) {
  if (c->closing || !c->fd.valid()) return;
  char buf[kReadChunk];
  // Before authentication one auth frame is all a client may send, so a
  // peer without the secret never gets more than that buffered.
  const size_t want = c->authenticated ? sizeof(buf) : 4 + kMaxAuthFrameBytes;
  ssize_t n = ::recv(c->fd.get(), buf, want, 0);
  if (n > 0) {
    c->in.append(buf, static_cast<size_t>(n));
    ProcessInput(c);
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  // EOF or reset: a client that goes away is normal, not worth a log line
  // unless it left half a frame behind.
  if (c->in.size() > c->in_offset) {
    Drop(c, "closed mid-frame", "connection closed in the middle of a frame", !c->authenticated);
  } else {
    c->fd.Reset();
  }
}

void KVServer::Impl::OnWritable(Conn* c) {
  if (!c->fd.valid()) return;
  while (!c->out.empty()) {
    ssize_t n = ::send(c->fd.get(), c->out.data(), c->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c->out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    c->fd.Reset();  // peer gone
    c->out.clear();
    return;
  }
}

void KVServer::Impl::ProcessInput(Conn* c) {
  std::string body;
  while (c->fd.valid() && !c->closing && !c->pending) {
    const uint32_t limit = c->authenticated ? kMaxFrameBytes : kMaxAuthFrameBytes;
    FrameStatus fs = ExtractFrame(c->in, &c->in_offset, &body, limit);
    if (fs == FrameStatus::kNeedMore) break;
    if (fs == FrameStatus::kTooLarge) {
      Drop(c, "malformed frame",
           std::string("frame larger than ") + std::to_string(limit) + " bytes" +
               (c->authenticated ? "" : " before authentication"),
           !c->authenticated);
      return;
    }
    if (fs == FrameStatus::kEmpty) {
      Drop(c, "malformed frame", "empty frame", !c->authenticated);
      return;
    }
    HandleFrame(c, body);
  }
  // Compact the buffer once consumed bytes dominate it.
  if (c->in_offset > 0 && c->in_offset * 2 >= c->in.size()) {
    c->in.erase(0, c->in_offset);
    c->in_offset = 0;
  }
}

void KVServer::Impl::HandleFrame(Conn* c, const std::string& body) {
  Message msg;
  if (!c->authenticated) {
    // The session is known only once the client's nonce arrives, and the
    // nonce sits inside the MAC'd message: decode it provisionally, then
    // verify the MAC over the session it implies.
    Message provisional;
    bool ok = body.size() > 8 + kMacBytes &&
              DecodeMessage(reinterpret_cast<const uint8_t*>(body.data()) + 8,
                            body.size() - 8 - kMacBytes, &provisional)
                  .ok() &&
              provisional.type == MsgType::kAuth;
    if (ok) {
      c->session = c->server_nonce + provisional.value;
      ok = OpenBody(secret, c->session, Direction::kToServer, 0, body, &msg).ok();
    }
    if (!ok) {
      Drop(c, "authentication failed",
           "authentication failed (wrong or missing HVD_RENDEZVOUS_SECRET)", true);
      return;
    }
    c->authenticated = true;
    c->next_counter = 1;
    Message reply;
    reply.type = MsgType::kAuthOk;
    Reply(c, 0, reply);
    return;
  }
  Status s = OpenBody(secret, c->session, Direction::kToServer, c->next_counter, body, &msg);
  if (!s.ok()) {
    Drop(c, "bad request frame", s.message(), false);
    return;
  }
  ++c->next_counter;
  HandleRequest(c, c->next_counter - 1, msg);
}

void KVServer::Impl::HandleRequest(Conn* c, uint64_t counter, const Message& req) {
  Message reply;
  switch (req.type) {
    case MsgType::kSet:
      store[req.keys[0]] = req.value;
      reply.type = MsgType::kOk;
      Reply(c, counter, reply);
      WakeWaiters();
      return;
    case MsgType::kAdd: {
      int64_t current = 0;
      auto it = store.find(req.keys[0]);
      if (it != store.end()) {
        try {
          size_t used = 0;
          current = std::stoll(it->second, &used);
          if (used != it->second.size()) throw std::invalid_argument("trailing");
        } catch (const std::exception&) {
          reply.type = MsgType::kError;
          reply.value = "add: key '" + req.keys[0] + "' does not hold an integer";
          Reply(c, counter, reply);
          return;
        }
      }
      // Wrap like two's complement instead of signed overflow (UB).
      int64_t result =
          static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(req.integer));
      store[req.keys[0]] = std::to_string(result);
      reply.type = MsgType::kInt;
      reply.integer = result;
      Reply(c, counter, reply);
      WakeWaiters();
      return;
    }
    case MsgType::kGet:
    case MsgType::kWait:
      c->pending = true;
      c->pending_msg = req;
      c->pending_counter = counter;
      c->pending_deadline = req.integer < 0
                                ? Deadline::Never()
                                : Deadline::After(static_cast<double>(req.integer) / 1e3);
      if (!TryComplete(c) && c->pending_deadline.Expired()) {
        // A zero timeout is a non-blocking probe: answer right away.
        c->pending = false;
        reply.type = MsgType::kTimeout;
        for (const auto& k : req.keys) {
          if (!store.count(k)) reply.keys.push_back(k);
        }
        Reply(c, counter, reply);
      }
      return;
    default:
      Drop(c, "bad request frame",
           std::string("unexpected request type '") + MsgTypeName(req.type) + "'", false);
      return;
  }
}

bool KVServer::Impl::TryComplete(Conn* c) {
  if (!c->pending) return false;
  for (const auto& k : c->pending_msg.keys) {
    if (!store.count(k)) return false;
  }
  Message reply;
  if (c->pending_msg.type == MsgType::kGet) {
    reply.type = MsgType::kValue;
    reply.value = store[c->pending_msg.keys[0]];
  } else {
    reply.type = MsgType::kOk;
  }
  c->pending = false;
  Reply(c, c->pending_counter, reply);
  return true;
}

void KVServer::Impl::WakeWaiters() {
  for (auto& entry : conns) {
    Conn* c = entry.second.get();
    // Only answer here: input left behind by a pipelining client is picked
    // up by the main loop, which keeps this free of recursion.
    if (c->pending) TryComplete(c);
  }
}

void KVServer::Impl::Reply(Conn* c, uint64_t counter, const Message& reply) {
  AppendFrame(SealBody(secret, c->session, Direction::kToClient, counter, reply), &c->out);
  OnWritable(c);
}

void KVServer::Impl::Drop(Conn* c, const char* reason, const std::string& detail, bool refused) {
  refusal_log.Record(c->peer, reason, detail, refused);
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    ++(refused ? stats.refused : stats.dropped);
  }
  // Nothing more is sent: an unauthenticated peer learns only that it was
  // cut off. Pending output (the hello) is discarded with the socket.
  c->pending = false;
  c->out.clear();
  std::string().swap(c->in);  // a dropped frame's memory goes now, not at the end of the turn
  c->fd.Reset();
}

}  // namespace rendezvous
}  // namespace hvd
