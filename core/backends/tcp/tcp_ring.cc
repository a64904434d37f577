#include "core/backends/tcp/tcp_ring.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <sstream>

#include "core/common/reduce.h"

namespace hvd {

using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

namespace {

std::string Seconds(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

int Mod(int a, int p) {
  return ((a % p) + p) % p;
}

// One call's layout. Block b = [start[b], start[b] + len[b]) elements; the
// first count % p blocks are one element longer. Steps 0..p-2 reduce-scatter,
// p-1..2p-3 allgather; step t sends block SendBlock(t) to the right and
// receives RecvBlock(t) from the left, each cut into `pieces` pieces of `pe`
// elements (a shorter block's last pieces may be empty: both sides skip
// them alike). Both streams carry the pieces in (step, piece) order, so no
// piece needs a header; piece j of step t can go once piece j of step t-1
// has arrived (and been reduced): the block sent at step t is the one
// received at step t-1.
struct Layout {
  int p, r, steps, pieces;
  int64_t esize, pe;
  std::vector<int64_t> start, len;

  Layout(int64_t count, int size, int rank, int64_t esz, int64_t piece_bytes)
      : p(size),
        r(rank),
        steps(2 * (size - 1)),
        esize(esz),
        start(static_cast<size_t>(size)),
        len(static_cast<size_t>(size)) {
    for (int b = 0; b < p; ++b) {
      len[b] = count / p + (b < count % p ? 1 : 0);
      start[b] = b == 0 ? 0 : start[b - 1] + len[b - 1];
    }
    pe = std::max<int64_t>(1, piece_bytes / esize);
    pieces = static_cast<int>(std::max<int64_t>(1, (len[0] + pe - 1) / pe));
  }
  int total() const { return steps * pieces; }
  int SendBlock(int t) const { return t < p - 1 ? Mod(r - t, p) : Mod(r + 1 - (t - p + 1), p); }
  int RecvBlock(int t) const { return t < p - 1 ? Mod(r - t - 1, p) : Mod(r - (t - p + 1), p); }
  // Elements of piece j of block b, and its first element.
  int64_t Count(int b, int j) const {
    return std::max<int64_t>(0, std::min(pe, len[b] - int64_t{j} * pe));
  }
  int64_t First(int b, int j) const { return start[b] + int64_t{j} * pe; }
};

// A position in one of the two streams: piece `i` (= step * pieces + piece)
// and the bytes of it already moved.
struct Cursor {
  int i = 0;
  int64_t done = 0;
};

}  // namespace

TcpRing::TcpRing(int rank, int size, UniqueFd right, UniqueFd left, double timeout_s,
                 std::vector<std::string> names)
    : rank_(rank),
      size_(size),
      right_(std::move(right)),
      left_(std::move(left)),
      timeout_s_(timeout_s),
      names_(std::move(names)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    abort_read_ = UniqueFd(p[0]);
    abort_write_ = UniqueFd(p[1]);
  }
}

std::string RingMemberName(const std::vector<std::string>& names, int r) {
  return static_cast<size_t>(r) < names.size() && !names[static_cast<size_t>(r)].empty()
             ? names[static_cast<size_t>(r)]
             : "ring rank " + std::to_string(r);
}

void TcpRing::Abort() {
  const char c = 0;
  if (abort_write_.valid()) (void)!::write(abort_write_.get(), &c, 1);
}

Status TcpRing::Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) {
  if (size_ == 1 || count <= 0) return Status::OK();
  const Layout L(count, size_, rank_, static_cast<int64_t>(DataTypeSize(dt)), piece_bytes_);
  uint8_t* data = static_cast<uint8_t*>(buf);
  const size_t piece = static_cast<size_t>(L.pe * L.esize);
  if (scratch_.size() < piece) scratch_.resize(piece);
  const int total = L.total();
  const int right = Mod(rank_ + 1, size_), left = Mod(rank_ - 1, size_);
  // Bytes of piece i in each stream (0: skipped).
  auto send_bytes = [&](int i) {
    return L.Count(L.SendBlock(i / L.pieces), i % L.pieces) * L.esize;
  };
  auto recv_bytes = [&](int i) {
    return L.Count(L.RecvBlock(i / L.pieces), i % L.pieces) * L.esize;
  };
  Cursor out, in;
  auto skip_empty = [&](Cursor& c, auto bytes) {
    while (c.i < total && c.done == bytes(c.i)) {
      ++c.i;
      c.done = 0;
    }
  };
  // Piece i of the send stream may go once piece i - pieces has arrived.
  auto ready = [&] { return out.i < L.pieces || in.i > out.i - L.pieces; };
  const int timeout_ms = timeout_s_ > 0 ? static_cast<int>(std::ceil(timeout_s_ * 1000.0)) : -1;
  skip_empty(out, send_bytes);
  skip_empty(in, recv_bytes);
  while (out.i < total || in.i < total) {
    bool moved = false;
    while (out.i < total && ready()) {
      const int t = out.i / L.pieces, j = out.i % L.pieces, b = L.SendBlock(t);
      const int64_t n = send_bytes(out.i);
      const ssize_t k = ::send(right_.get(), data + L.First(b, j) * L.esize + out.done,
                               static_cast<size_t>(n - out.done), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (k < 0) {
        return Status::PeerLost("cross-host ring: sending to " + RingMemberName(names_, right) +
                                " failed: " + ErrnoString(errno));
      }
      moved = true;
      out.done += k;
      if (out.done == n) {
        ++out.i;
        out.done = 0;
        skip_empty(out, send_bytes);
      }
    }
    while (in.i < total) {
      const int t = in.i / L.pieces, j = in.i % L.pieces, b = L.RecvBlock(t);
      const int64_t n = recv_bytes(in.i);
      const bool reduce = t < size_ - 1;  // reduce-scatter: into scratch, then reduced
      uint8_t* dst = (reduce ? scratch_.data() : data + L.First(b, j) * L.esize) + in.done;
      const ssize_t k = ::recv(left_.get(), dst, static_cast<size_t>(n - in.done), MSG_DONTWAIT);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (k <= 0) {
        return Status::PeerLost("cross-host ring: the connection from " +
                                RingMemberName(names_, left) +
                                (k == 0 ? " was closed" : " failed: " + ErrnoString(errno)));
      }
      moved = true;
      in.done += k;
      if (in.done == n) {
        if (reduce)
          ReduceInto(data + L.First(b, j) * L.esize, scratch_.data(), n / L.esize, dt, op);
        ++in.i;
        in.done = 0;
        skip_empty(in, recv_bytes);
      }
    }
    if (moved) continue;
    // Nothing moves: sleep until a socket can, Abort, or the timeout.
    pollfd fds[3];
    nfds_t nfds = 0;
    const bool want_out = out.i < total && ready();
    if (want_out) fds[nfds++] = {right_.get(), POLLOUT, 0};
    if (in.i < total) fds[nfds++] = {left_.get(), POLLIN, 0};
    if (abort_read_.valid()) fds[nfds++] = {abort_read_.get(), POLLIN, 0};
    const int rc = ::poll(fds, nfds, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Status::Backend("cross-host ring: poll failed: " + ErrnoString(errno));
    if (abort_read_.valid() && (fds[nfds - 1].revents & POLLIN)) {
      return Status::Backend("cross-host ring: aborted");
    }
    if (rc == 0) {
      return Status::Timeout(
          "cross-host ring: no bytes moved for " + Seconds(timeout_s_) + " s; waiting " +
          (in.i < total ? "for data from " + RingMemberName(names_, left) : std::string()) +
          (in.i < total && want_out ? " and " : "") +
          (want_out ? "to send to " + RingMemberName(names_, right) : std::string()) +
          " (HVD_GLOO_TIMEOUT_SECONDS)");
    }
  }
  return Status::OK();
}

}  // namespace hvd
