#include "core/backends/tcp/tcp_link.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "core/common/wire.h"

namespace hvd {

using rendezvous::Deadline;
using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

Status ListenTcp(const std::string& host, UniqueFd* out, std::string* where) {
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
  const int port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                                 : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  *where =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  *out = std::move(fd);
  return Status::OK();
}

std::string RandomToken(size_t bytes) {
  std::random_device rd;  // /dev/urandom: the token only needs to be unguessable
  std::string t(bytes, '\0');
  for (auto& c : t) c = static_cast<char>(rd() & 0xff);
  return t;
}

Status ConnectAndGreet(const std::string& where, const std::string& hello, Deadline deadline,
                       UniqueFd* out) {
  const size_t colon = where.rfind(':');
  if (colon == std::string::npos) return Status::Internal("bad address " + where);
  std::string host = where.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  HVD_RETURN_IF_ERROR(rendezvous::ConnectTcp(host, std::atoi(where.c_str() + colon + 1), deadline,
                                             out, /*retry_refused=*/false));
  return rendezvous::SendAll(out->get(), hello.data(), hello.size(), deadline);
}

std::string Hello(uint32_t magic, int32_t rank, const std::string& token) {
  WireWriter w;
  w.I32(static_cast<int32_t>(magic));
  w.I32(rank);
  return w.Take() + token;
}

bool ReadHello(int fd, uint32_t magic, const std::string& token, Deadline deadline, int32_t* rank) {
  std::string hello(8 + token.size(), '\0');
  if (!rendezvous::RecvAll(fd, &hello[0], hello.size(), deadline).ok()) return false;
  WireReader rd(hello.data(), hello.size());
  int32_t m = 0;
  rd.I32(&m);
  rd.I32(rank);
  return static_cast<uint32_t>(m) == magic && hello.compare(8, token.size(), token) == 0;
}

}  // namespace hvd
