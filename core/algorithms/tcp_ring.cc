#include "core/algorithms/tcp_ring.h"

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

// One call: the two streams' cursors over `data`, moved by non-blocking
// sends and receives until both have carried every piece.
class RingCall {
 public:
  RingCall(const Layout& layout, uint8_t* data, uint8_t* scratch, DataType dt, ReduceOp op)
      : L(layout), data_(data), scratch_(scratch), dt_(dt), op_(op) {
    Skip(&out_, true);
    Skip(&in_, false);
  }
  bool sending() const { return out_.i < L.total(); }
  bool receiving() const { return in_.i < L.total(); }
  // Piece i of the send stream may go once piece i - pieces has arrived.
  bool ready() const { return sending() && in_.i > out_.i - L.pieces; }

  // Sends what the socket takes (errno of a failure in *err, else 0).
  bool Send(int fd, int* err) {
    bool moved = false;
    *err = 0;
    while (ready()) {
      const int b = L.SendBlock(out_.i / L.pieces), j = out_.i % L.pieces;
      const int64_t n = Bytes(out_.i, true);
      const ssize_t k = ::send(fd, data_ + L.First(b, j) * L.esize + out_.done,
                               static_cast<size_t>(n - out_.done), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) *err = errno;
        break;
      }
      moved = true;
      if ((out_.done += k) == n) Next(&out_, true);
    }
    return moved;
  }

  // Receives what has arrived, reducing each whole reduce-scatter piece
  // (*err: errno of a failure, -1 for a closed connection, else 0).
  bool Receive(int fd, int* err) {
    bool moved = false;
    *err = 0;
    while (receiving()) {
      const int t = in_.i / L.pieces, j = in_.i % L.pieces, b = L.RecvBlock(t);
      const int64_t n = Bytes(in_.i, false);
      const bool reduce = t < L.p - 1;  // reduce-scatter: into scratch, then reduced
      uint8_t* dst = (reduce ? scratch_ : data_ + L.First(b, j) * L.esize) + in_.done;
      const ssize_t k = ::recv(fd, dst, static_cast<size_t>(n - in_.done), MSG_DONTWAIT);
      if (k < 0 && errno == EINTR) continue;
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) *err = k == 0 ? -1 : errno;
      if (k <= 0) break;
      moved = true;
      if ((in_.done += k) < n) continue;
      if (reduce) ReduceInto(data_ + L.First(b, j) * L.esize, scratch_, n / L.esize, dt_, op_);
      Next(&in_, false);
    }
    return moved;
  }

 private:
  // Bytes of piece i of the send or the receive stream (0: skipped).
  int64_t Bytes(int i, bool send) const {
    const int t = i / L.pieces;
    return L.Count(send ? L.SendBlock(t) : L.RecvBlock(t), i % L.pieces) * L.esize;
  }
  void Next(Cursor* c, bool send) {
    ++c->i;
    c->done = 0;
    Skip(c, send);
  }
  void Skip(Cursor* c, bool send) {
    while (c->i < L.total() && Bytes(c->i, send) == 0) ++c->i;
  }

  const Layout& L;
  uint8_t* data_;
  uint8_t* scratch_;
  DataType dt_;
  ReduceOp op_;
  Cursor out_, in_;
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
  if (!failed_.ok()) {
    return Status(failed_.code(),
                  "cross-host ring: unusable since an earlier call failed: " + failed_.message());
  }
  Status s = Run(buf, count, dt, op);
  if (!s.ok()) failed_ = s;
  return s;
}

Status TcpRing::Run(void* buf, int64_t count, DataType dt, ReduceOp op) {
  if (size_ == 1 || count <= 0) return Status::OK();
  const Layout layout(count, size_, rank_, static_cast<int64_t>(DataTypeSize(dt)), piece_bytes_);
  const size_t piece = static_cast<size_t>(layout.pe * layout.esize);
  if (scratch_.size() < piece) scratch_.resize(piece);
  RingCall call(layout, static_cast<uint8_t*>(buf), scratch_.data(), dt, op);
  const std::string right = RingMemberName(names_, Mod(rank_ + 1, size_));
  const std::string left = RingMemberName(names_, Mod(rank_ - 1, size_));
  const int timeout_ms = timeout_s_ > 0 ? static_cast<int>(std::ceil(timeout_s_ * 1000.0)) : -1;
  while (call.sending() || call.receiving()) {
    int send_err = 0, recv_err = 0;
    const bool sent = call.Send(right_.get(), &send_err);
    const bool received = call.Receive(left_.get(), &recv_err);
    if (send_err) {
      return Status::PeerLost("cross-host ring: sending to " + right +
                              " failed: " + ErrnoString(send_err));
    }
    if (recv_err) {
      return Status::PeerLost("cross-host ring: the connection from " + left +
                              (recv_err < 0 ? " was closed" : " failed: " + ErrnoString(recv_err)));
    }
    if (sent || received) continue;
    // Nothing moves: sleep until a socket can, Abort, or the timeout.
    pollfd fds[3];
    nfds_t nfds = 0;
    const bool want_out = call.ready(), want_in = call.receiving();
    if (want_out) fds[nfds++] = {right_.get(), POLLOUT, 0};
    if (want_in) fds[nfds++] = {left_.get(), POLLIN, 0};
    if (abort_read_.valid()) fds[nfds++] = {abort_read_.get(), POLLIN, 0};
    const int rc = ::poll(fds, nfds, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Status::Backend("cross-host ring: poll failed: " + ErrnoString(errno));
    if (abort_read_.valid() && (fds[nfds - 1].revents & POLLIN)) {
      return Status::Backend("cross-host ring: aborted");
    }
    if (rc == 0) {
      return Status::Timeout("cross-host ring: no bytes moved for " + Seconds(timeout_s_) +
                             " s; waiting " + (want_in ? "for data from " + left : std::string()) +
                             (want_in && want_out ? " and " : "") +
                             (want_out ? "to send to " + right : std::string()) +
                             " (HVD_GLOO_TIMEOUT_SECONDS)");
    }
  }
  return Status::OK();
}

}  // namespace hvd
