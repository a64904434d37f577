#include "core/backends/mpi/wake_socket.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace hvd {
namespace {

// The abstract address of `rank`'s socket: no file, gone with the process.
socklen_t Address(uint64_t token, int rank, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  const int n = std::snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "hvd-wake-%016llx-%d",
                              static_cast<unsigned long long>(token), rank);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

Status WakeSocket::Open(uint64_t token, int rank, std::unique_ptr<WakeSocket>* out) {
  rendezvous::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::Backend(std::string("wake socket: ") + std::strerror(errno));
  sockaddr_un a;
  const socklen_t len = Address(token, rank, &a);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    return Status::Backend(std::string("wake socket: bind: ") + std::strerror(errno));
  }
  *out = std::make_unique<WakeSocket>(std::move(fd), token);
  return Status::OK();
}

bool WakeSocket::Wake(int peer) const {
  sockaddr_un a;
  const socklen_t len = Address(token_, peer, &a);
  const char byte = 0;
  for (;;) {
    if (::sendto(fd_.get(), &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&a), len) == 1) {
      return true;
    }
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS;
  }
}

int WakeSocket::Drain() const {
  char buf[64];
  int n = 0;
  for (;;) {
    if (::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
      ++n;
    } else if (errno != EINTR) {
      return n;
    }
  }
}

}  // namespace hvd
