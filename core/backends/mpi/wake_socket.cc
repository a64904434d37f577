#include "core/backends/mpi/wake_socket.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace hvd {
namespace {

constexpr size_t kLine = 64;  // one flag per cache line: no false sharing

// The abstract address of `rank`'s socket: no file, gone with the process.
socklen_t Address(uint64_t token, int rank, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  const int n = std::snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "hvd-wake-%016llx-%d",
                              static_cast<unsigned long long>(token), rank);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

size_t PageBytes(int size) {
  return static_cast<size_t>(size) * kLine;
}

}  // namespace

Status WakeSocket::Open(uint64_t token, int rank, int size, std::unique_ptr<WakeSocket>* out) {
  rendezvous::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::Backend(std::string("wake socket: ") + std::strerror(errno));
  sockaddr_un a;
  const socklen_t len = Address(token, rank, &a);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    return Status::Backend(std::string("wake socket: bind: ") + std::strerror(errno));
  }
  *out = std::make_unique<WakeSocket>(std::move(fd), token, rank, size);
  return Status::OK();
}

WakeSocket::WakeSocket(rendezvous::UniqueFd fd, uint64_t token, int rank, int size)
    : fd_(std::move(fd)), token_(token), rank_(rank), size_(size) {}

WakeSocket::~WakeSocket() {
  if (page_) ::munmap(page_, PageBytes(size_));
}

std::atomic<int32_t>* WakeSocket::Flag(int rank) const {
  return reinterpret_cast<std::atomic<int32_t>*>(static_cast<char*>(page_) + rank * kLine);
}

// One empty datagram to `peer`, carrying `pass_fd` (SCM_RIGHTS) unless -1.
bool WakeSocket::Send(int peer, int pass_fd) const {
  sockaddr_un a;
  msghdr m{};
  m.msg_name = &a;
  m.msg_namelen = Address(token_, peer, &a);
  char byte = 0;
  iovec iov{&byte, 1};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  for (;;) {
    if (::sendmsg(fd_.get(), &m, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) return true;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS;
  }
}

bool WakeSocket::Introduce() {
  if (rank_ != 0) return Send(0, -1);
  rendezvous::UniqueFd mem(::memfd_create("hvd-wake", MFD_CLOEXEC));
  if (!mem.valid() || ::ftruncate(mem.get(), static_cast<off_t>(PageBytes(size_))) != 0) {
    return false;
  }
  void* p = ::mmap(nullptr, PageBytes(size_), PROT_READ | PROT_WRITE, MAP_SHARED, mem.get(), 0);
  if (p == MAP_FAILED) return false;
  page_ = p;  // zero-filled: nobody sleeps
  bool sent = true;
  for (int peer = 1; peer < size_; ++peer) sent = Send(peer, mem.get()) && sent;
  return sent;
}

bool WakeSocket::Introduced() {
  int got = 0;
  for (;;) {
    char byte;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    if (::recvmsg(fd_.get(), &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    ++got;
    const cmsghdr* c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) continue;
    int passed = -1;
    std::memcpy(&passed, CMSG_DATA(c), sizeof(int));
    rendezvous::UniqueFd mem(passed);
    void* p = ::mmap(nullptr, PageBytes(size_), PROT_READ | PROT_WRITE, MAP_SHARED, mem.get(), 0);
    if (p == MAP_FAILED) continue;
    if (page_) {
      ::munmap(p, PageBytes(size_));
    } else {
      page_ = p;
    }
  }
  return got >= (rank_ == 0 ? size_ - 1 : 1) && page_ != nullptr;
}

// Both sides use read-modify-writes (full barriers; not fences, which
// TSan does not model): a sender's read either sees the flag raised or
// comes before the raise in the flag's order, and then the receiver's
// last look comes after the sender's message went out.
bool WakeSocket::Wake(int peer) const {
  if (page_ && Flag(peer)->fetch_add(0, std::memory_order_seq_cst) == 0) return true;
  return Send(peer, -1);
}

void WakeSocket::SetSleeping(bool sleeping) {
  if (!page_) return;
  if (sleeping) slept_ = true;
  Flag(rank_)->exchange(sleeping ? 1 : 0, std::memory_order_seq_cst);
}

int WakeSocket::Drain() {
  if (!slept_) return 0;
  slept_ = false;
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
