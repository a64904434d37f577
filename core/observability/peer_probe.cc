#include "core/observability/peer_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
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

constexpr int32_t kQuestionMagic = 0x48505131;  // "HPQ1"
constexpr int32_t kAnswerMagic = 0x48504131;    // "HPA1"
constexpr size_t kMaxMessage = 4096;

// [magic i32][length i32][body]
std::string Frame(int32_t magic, const std::string& body) {
  WireWriter w;
  w.I32(magic);
  w.I32(static_cast<int32_t>(body.size()));
  return w.Take() + body;
}

// A complete frame with `magic` at the start of `buf`, if there is one.
bool Unframe(const std::string& buf, int32_t magic, std::string* body, bool* bad) {
  *bad = false;
  if (buf.size() < 8) return false;
  WireReader r(buf.data(), 8);
  int32_t m = 0, n = 0;
  r.I32(&m);
  r.I32(&n);
  if (m != magic || n < 0 || static_cast<size_t>(n) > kMaxMessage) {
    *bad = true;
    return false;
  }
  if (buf.size() < 8 + static_cast<size_t>(n)) return false;
  *body = buf.substr(8, static_cast<size_t>(n));
  return true;
}

bool SplitAddress(const std::string& address, sockaddr_storage* ss, socklen_t* len) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints,
                  &res) != 0) {
    return false;
  }
  std::memcpy(ss, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

// One peer being asked: connect, send the question, read the answer.
struct Asking {
  UniqueFd fd;
  bool connected = false;
  bool done = false;
  std::string in;
  ProbeResult result;

  void Finish(ProbeResult::Verdict v, std::string why) {
    done = true;
    result.verdict = v;
    result.answer = std::move(why);
    fd.Reset();
  }
  void Start(const std::string& address) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (!SplitAddress(address, &ss, &len)) return Finish(ProbeResult::kGone, "bad address");
    fd = UniqueFd(::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return Finish(ProbeResult::kGone, "socket: " + ErrnoString(errno));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
      return Finish(ProbeResult::kGone, ErrnoString(errno));
    }
  }
  void OnConnected(const std::string& question) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Finish(ProbeResult::kGone, ErrnoString(err));
    connected = true;
    // A few hundred bytes into an empty socket buffer: never blocks.
    if (::send(fd.get(), question.data(), question.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(question.size())) {
      Finish(ProbeResult::kGone, "send: " + ErrnoString(errno));
    }
  }
  void OnReadable() {
    char buf[kMaxMessage];
    const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return Finish(ProbeResult::kGone, "closed the connection without answering");
    in.append(buf, static_cast<size_t>(n));
    std::string body;
    bool bad = false;
    if (Unframe(in, kAnswerMagic, &body, &bad)) return Finish(ProbeResult::kAnswered, body);
    if (bad) Finish(ProbeResult::kGone, "answered with garbage");
  }
};

}  // namespace

std::string NewProbeToken() {
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  std::string t(32, '0');
  for (auto& c : t) c = kHex[rd() & 15];
  return t;
}

Status ProbeServer::Start(const std::string& token, Answer answer,
                          std::unique_ptr<ProbeServer>* out) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::Backend("probe server: socket: " + ErrnoString(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(fd.get(), 64) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Status::Backend("probe server: cannot listen: " + ErrnoString(errno));
  }
  *out = std::make_unique<ProbeServer>(std::move(fd), ntohs(a.sin_port), token, std::move(answer));
  return Status::OK();
}

ProbeServer::ProbeServer(UniqueFd listener, int port, std::string token, Answer answer)
    : listener_(std::move(listener)),
      stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      port_(port),
      token_(std::move(token)),
      answer_(std::move(answer)) {
  thread_ = std::thread(&ProbeServer::Serve, this);
}

ProbeServer::~ProbeServer() {
  const uint64_t one = 1;
  ssize_t n = ::write(stop_.get(), &one, sizeof(one));
  (void)n;
  if (thread_.joinable()) thread_.join();
}

void ProbeServer::Serve() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.valid()) AnswerOne(fd.get());
  }
}

void ProbeServer::AnswerOne(int fd) {
  // Probes are rare and answered in microseconds: one at a time, each
  // bounded, so a connection that sends nothing cannot hold the server.
  const Deadline deadline = Deadline::After(0.5);
  std::string in;
  std::string body;
  bool bad = false;
  while (!Unframe(in, kQuestionMagic, &body, &bad)) {
    if (bad || in.size() > kMaxMessage + 8) return;
    char buf[512];
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, deadline.PollTimeoutMs()) <= 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
  }
  WireReader r(body);
  std::string token;
  ProbeQuestion q;
  if (!r.Str(&token) || token != token_ || !r.I32(&q.set) || !r.Str(&q.tensor)) return;
  const std::string reply = Frame(kAnswerMagic, answer_(q));
  (void)rendezvous::SendAll(fd, reply.data(), reply.size(), deadline);
}

std::vector<ProbeResult> ProbePeers(const std::vector<std::string>& addresses,
                                    const std::string& token, const ProbeQuestion& question,
                                    double timeout_s) {
  WireWriter w;
  w.Str(token);
  w.I32(question.set);
  w.Str(question.tensor);
  const std::string q = Frame(kQuestionMagic, w.Take());
  std::vector<Asking> asking(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) asking[i].Start(addresses[i]);
  const Deadline deadline = Deadline::After(timeout_s);
  for (;;) {
    std::vector<pollfd> p;
    std::vector<size_t> who;
    for (size_t i = 0; i < asking.size(); ++i) {
      if (asking[i].done) continue;
      p.push_back(
          {asking[i].fd.get(), static_cast<short>(asking[i].connected ? POLLIN : POLLOUT), 0});
      who.push_back(i);
    }
    if (p.empty()) break;
    const int n = ::poll(p.data(), p.size(), deadline.PollTimeoutMs());
    if (n == 0 || deadline.Expired()) break;
    for (size_t k = 0; k < p.size(); ++k) {
      if (!p[k].revents) continue;
      Asking& a = asking[who[k]];
      if (!a.connected) {
        a.OnConnected(q);
      } else {
        a.OnReadable();
      }
    }
  }
  std::vector<ProbeResult> out;
  for (auto& a : asking) {
    if (!a.done) {
      a.result.verdict = ProbeResult::kSilent;
      a.result.answer = a.connected ? "stopped or hung" : "unreachable, stopped or hung";
    }
    out.push_back(a.result);
  }
  return out;
}

}  // namespace hvd
