// Small POSIX socket helpers shared by the rendezvous server, its client and
// hvdrun: an owning fd, deadlines, connect-with-retry and whole-buffer I/O.
// Depends only on core/status.h and the C/C++ standard libraries so that
// hvdrun can compile it without the rest of the core.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/status.h"

namespace hvd {
namespace rendezvous {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

using Clock = std::chrono::steady_clock;

// A point in time after which an operation gives up. A negative timeout
// means "never" (used for blocking waits the caller bounds elsewhere).
class Deadline {
 public:
  static Deadline After(double seconds);
  static Deadline Never() { return Deadline(); }
  bool never() const { return never_; }
  bool Expired() const { return !never_ && Clock::now() >= at_; }
  // Milliseconds left, rounded up, for poll(); -1 when there is no deadline.
  int PollTimeoutMs() const;

 private:
  bool never_ = true;
  Clock::time_point at_{};
};

std::string ErrnoString(int err);

// "a.b.c.d:port" of the socket's peer (or "<unknown peer>").
std::string PeerAddress(int fd);

Status SetNonBlocking(int fd);

// The local IP address the kernel would use to reach host:port (a UDP
// connect() only selects a route; no packet is sent). Used to tell peers
// where to find this process.
Status LocalAddressTowards(const std::string& host, const std::string& port, std::string* ip);

// This host's IPv4 address on `interface`: a name ("eth0"), or a subnet
// ("10.0.0.0/24", as Open MPI's btl_tcp_if_include takes it), matched by
// the first address inside it.
Status InterfaceAddress(const std::string& interface, std::string* address);

// Resolves host (name or literal, IPv4 or IPv6) and connects, retrying
// refused connections until the deadline: the server may still be starting
// (`retry_refused` false: it is known to listen already, so fail at once).
Status ConnectTcp(const std::string& host, int port, Deadline deadline, UniqueFd* out,
                  bool retry_refused = true);

// Writes all of data (blocking or non-blocking fd) before the deadline.
Status SendAll(int fd, const void* data, size_t size, Deadline deadline);

// Reads exactly size bytes before the deadline; EOF is Code::kPeerLost.
Status RecvAll(int fd, void* data, size_t size, Deadline deadline);

}  // namespace rendezvous
}  // namespace hvd
