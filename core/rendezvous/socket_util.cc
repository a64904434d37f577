#include "core/rendezvous/socket_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <thread>

namespace hvd {
namespace rendezvous {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Deadline Deadline::After(double seconds) {
  Deadline d;
  if (seconds < 0 || !std::isfinite(seconds)) return d;
  d.never_ = false;
  // Cap at a day so the conversion below cannot overflow.
  seconds = std::min(seconds, 86400.0);
  d.at_ = Clock::now() +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return d;
}

int Deadline::PollTimeoutMs() const {
  if (never_) return -1;
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
  return static_cast<int>(std::min<long long>(ms, 1 << 30));
}

std::string ErrnoString(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* s = strerror_r(err, buf, sizeof(buf));
  return s;
}

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "<unknown peer>";
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "<unknown peer>";
  }
  if (ss.ss_family == AF_INET6) return std::string("[") + host + "]:" + serv;
  return std::string(host) + ":" + serv;
}

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status::Internal("fcntl(O_NONBLOCK): " + ErrnoString(errno));
  }
  return Status::OK();
}

namespace {

// One non-blocking connect attempt bounded by the deadline.
Status ConnectOnce(const addrinfo* ai, Deadline deadline, UniqueFd* out, int* err) {
  UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return Status::Backend("socket: " + ErrnoString(errno));
  }
  HVD_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      return Status::Backend("connect: " + ErrnoString(errno));
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int r;
    do {
      r = ::poll(&p, 1, deadline.PollTimeoutMs());
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      *err = ETIMEDOUT;
      return Status::Timeout("connect timed out");
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (r < 0 || so_error != 0) {
      *err = r < 0 ? errno : so_error;
      return Status::Backend("connect: " + ErrnoString(*err));
    }
  }
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  *out = std::move(fd);
  return Status::OK();
}

}  // namespace

namespace {

// "10.0.0.0/24" -> network and mask (host order); false if not a subnet.
bool ParseSubnet(const std::string& s, uint32_t* net, uint32_t* mask) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return false;
  in_addr a{};
  if (inet_pton(AF_INET, s.substr(0, slash).c_str(), &a) != 1) return false;
  char* end = nullptr;
  const long bits = std::strtol(s.c_str() + slash + 1, &end, 10);
  if (*end != '\0' || end == s.c_str() + slash + 1 || bits < 0 || bits > 32) return false;
  *mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  *net = ntohl(a.s_addr) & *mask;
  return true;
}

}  // namespace

Status InterfaceAddress(const std::string& interface, std::string* address) {
  uint32_t net = 0, mask = 0;
  const bool subnet = ParseSubnet(interface, &net, &mask);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Status::Backend("getifaddrs: " + ErrnoString(errno));
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, &freeifaddrs);
  bool exists = false;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_name == nullptr || (!subnet && interface != it->ifa_name)) continue;
    exists = exists || !subnet;
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    const in_addr sin = reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr;
    if (subnet && (ntohl(sin.s_addr) & mask) != net) continue;
    char buf[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &sin, buf, sizeof(buf));
    *address = buf;
    return Status::OK();
  }
  if (subnet) return Status::Invalid("no network interface has an address in " + interface);
  return Status::Invalid("network interface '" + interface + "' " +
                         (exists ? "has no IPv4 address" : "does not exist"));
}

Status ConnectTcp(const std::string& host, int port, Deadline deadline, UniqueFd* out,
                  bool retry_refused) {
  if (port <= 0 || port > 65535) {
    return Status::Invalid("invalid port " + std::to_string(port));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::Invalid("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
  std::string where = host + ":" + service;
  int backoff_ms = 10;
  while (true) {
    int err = 0;
    Status last;
    for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      last = ConnectOnce(ai, deadline, out, &err);
      if (last.ok()) return last;
    }
    // Only "nobody listening yet" is worth retrying.
    bool retry = (err == ECONNREFUSED && retry_refused) || err == ETIMEDOUT || err == EAGAIN;
    if (!retry) return Status::Backend("cannot connect to " + where + ": " + last.message());
    if (deadline.Expired()) {
      return Status::Timeout("cannot connect to " + where +
                             " before the timeout: " + last.message());
    }
    int sleep_ms = backoff_ms;
    int left = deadline.PollTimeoutMs();
    if (left >= 0) sleep_ms = std::min(sleep_ms, left);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    backoff_ms = std::min(backoff_ms * 2, 500);
  }
}

Status SendAll(int fd, const void* data, size_t size, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      int r = ::poll(&pfd, 1, deadline.PollTimeoutMs());
      if (r == 0) return Status::Timeout("send timed out");
      continue;
    }
    return Status::PeerLost("send: " + ErrnoString(errno));
  }
  return Status::OK();
}

Status RecvAll(int fd, void* data, size_t size, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, deadline.PollTimeoutMs());
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::Timeout("receive timed out");
    ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Status::PeerLost("connection closed by peer");
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    return Status::PeerLost("recv: " + ErrnoString(errno));
  }
  return Status::OK();
}

Status LocalAddressTowards(const std::string& host, const std::string& port, std::string* ip) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Status::Invalid("cannot resolve '" + host + "': " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 ||
        getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      continue;
    }
    char buf[INET6_ADDRSTRLEN] = {0};
    const void* addr =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(local.ss_family, addr, buf, sizeof(buf)) == nullptr) continue;
    *ip = buf;
    return Status::OK();
  }
  return Status::Invalid("no local address has a route to '" + host + "'");
}

}  // namespace rendezvous
}  // namespace hvd
