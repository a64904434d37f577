#include "core/backends/tcp/tcp_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd {

using rendezvous::Deadline;
using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

namespace {

constexpr uint32_t kMaxFrame = 1u << 30;

}  // namespace

TcpChannel::TcpChannel(int rank, int size, std::vector<UniqueFd> sockets, std::string coordinator)
    : rank_(rank),
      size_(size),
      coordinator_(std::move(coordinator)),
      links_(static_cast<size_t>(size)) {
  for (size_t i = 0; i < sockets.size() && i < links_.size(); ++i) {
    links_[i].fd = std::move(sockets[i]);
  }
}

TcpChannel::~TcpChannel() {
  // Say we are done, then let what the peer still sends drain until it
  // closes too (bounded): closing with unread data would reset the
  // connection and could destroy frames the peer has not read yet.
  std::vector<pollfd> open;
  for (auto& l : links_) {
    if (!l.fd.valid()) continue;
    ::shutdown(l.fd.get(), SHUT_WR);
    open.push_back({l.fd.get(), POLLIN, 0});
  }
  const Deadline deadline = Deadline::After(1.0);
  char sink[4096];
  while (!open.empty() && !deadline.Expired()) {
    if (::poll(open.data(), open.size(), deadline.PollTimeoutMs()) <= 0) break;
    for (size_t i = 0; i < open.size();) {
      const ssize_t n = open[i].revents ? ::recv(open[i].fd, sink, sizeof(sink), 0) : 1;
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        open.erase(open.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
}

Status TcpChannel::Lose(int peer, const std::string& why) {
  Link& l = links_[static_cast<size_t>(peer)];
  if (l.lost.ok()) {
    // "rank 1 (host h)" -> "rank 1 (host h, 10.0.0.2:4711)": the address
    // tells apart ranks on hosts that share a name.
    std::string who = PeerName(peer);
    const std::string addr = rendezvous::PeerAddress(l.fd.get());
    if (!who.empty() && who.back() == ')') {
      who.insert(who.size() - 1, ", " + addr);
    } else {
      who += " (" + addr + ")";
    }
    l.lost = Status::PeerLost("control connection to " + who + " lost: " + why);
  }
  return l.lost;
}

Status TcpChannel::Send(int peer, std::string bytes) {
  if (peer < 0 || peer >= size_)
    return Status::Internal("control channel: no rank " + std::to_string(peer));
  Link& l = links_[static_cast<size_t>(peer)];
  if (!l.lost.ok()) return l.lost;
  if (!l.fd.valid()) {
    return Status::Internal("control channel: no link from rank " + std::to_string(rank_) +
                            " to rank " + std::to_string(peer));
  }
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  l.out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  l.out.append(bytes);
  return Flush(peer);
}

Status TcpChannel::Flush(int peer) {
  Link& l = links_[static_cast<size_t>(peer)];
  while (l.out_pos < l.out.size()) {
    const ssize_t n =
        ::send(l.fd.get(), l.out.data() + l.out_pos, l.out.size() - l.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      l.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::OK();
    return Lose(peer, ErrnoString(errno));
  }
  l.out.clear();
  l.out_pos = 0;
  return Status::OK();
}

Status TcpChannel::Fill(int peer, std::vector<ChannelMessage>* out) {
  Link& l = links_[static_cast<size_t>(peer)];
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(l.fd.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      l.in.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n == 0) return Lose(peer, "connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return Lose(peer, ErrnoString(errno));
  }
  size_t pos = 0;
  while (l.in.size() - pos >= sizeof(uint32_t)) {
    uint32_t n;
    std::memcpy(&n, l.in.data() + pos, sizeof(n));
    if (n > kMaxFrame) return Lose(peer, "malformed frame of " + std::to_string(n) + " bytes");
    if (l.in.size() - pos - sizeof(n) < n) break;
    out->push_back({peer, l.in.substr(pos + sizeof(n), n)});
    pos += sizeof(n) + n;
  }
  l.in.erase(0, pos);
  return Status::OK();
}

Status TcpChannel::Receive(std::vector<ChannelMessage>* out) {
  for (int peer = 0; peer < size_; ++peer) {
    Link& l = links_[static_cast<size_t>(peer)];
    if (!l.fd.valid() || !l.lost.ok()) continue;
    Status s = Flush(peer);
    if (s.ok()) s = Fill(peer, out);
    if (!s.ok()) {
      // Reported once; the descriptor goes so poll() stops waking for it.
      out->push_back({peer, s.message(), true});
      l.fd.Reset();
    }
  }
  return Status::OK();
}

void TcpChannel::PollFds(std::vector<PollFd>* out) const {
  for (const auto& l : links_) {
    if (l.fd.valid() && l.lost.ok()) out->push_back({l.fd.get(), l.out_pos < l.out.size()});
  }
}

}  // namespace hvd
