#include "core/dataplane/decorators/peer_memory.h"

#include <limits.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace hvd {
namespace {

// Drops the first `bytes` of the list that starts at v[*i].
void Advance(std::vector<iovec>& v, size_t* i, size_t bytes) {
  while (bytes > 0 && *i < v.size()) {
    iovec& e = v[*i];
    const size_t take = std::min(bytes, e.iov_len);
    e.iov_base = static_cast<char*>(e.iov_base) + take;
    e.iov_len -= take;
    bytes -= take;
    if (e.iov_len == 0) ++*i;
  }
}

}  // namespace

Status ReadPeerMemory(pid_t pid, std::vector<iovec>* local, std::vector<iovec>* remote) {
  constexpr size_t kMax = IOV_MAX;  // entries per call
  size_t li = 0, ri = 0;
  while (li < local->size() && ri < remote->size()) {
    const size_t nl = std::min(kMax, local->size() - li), nr = std::min(kMax, remote->size() - ri);
    const ssize_t got = ::process_vm_readv(pid, local->data() + li, nl, remote->data() + ri, nr, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;  // 0 bytes: not mapped there
      const std::string what = "process " + std::to_string(pid);
      if (err == ESRCH) return Status::PeerLost(what + " is gone");
      return Status::Backend("reading the memory of " + what + ": " + std::strerror(err));
    }
    Advance(*local, &li, static_cast<size_t>(got));
    Advance(*remote, &ri, static_cast<size_t>(got));
  }
  local->clear();
  remote->clear();
  return Status::OK();
}

}  // namespace hvd
