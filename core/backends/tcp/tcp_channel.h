// A ControlChannel over TCP sockets in a star: every member of the set keeps
// one connection to the coordinator (rank 0 of the set). Messages are
// length-prefixed frames; sockets are non-blocking, so a send never waits
// for a peer, and the set's loop polls the descriptors together with its
// own wake-up descriptor: an idle rank sleeps in the kernel and wakes the
// moment a message arrives. Used by the Gloo backend (whose own pairs can
// only be waited on, not polled) and by MPI (whose messages must be
// polled) where every member reaches the coordinator. Its set-up is in
// tcp_channel_setup.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/backends/control_channel.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

class TcpChannel : public ControlChannel {
 public:
  // Collective over `comm` (a host Comm: its Broadcast carries rank 0's
  // address, its Allreduce the verdict). Rank 0 listens on `bind_host` (an
  // address of this host that the other members can reach), the others
  // connect within `timeout_s` and prove they belong to the set with a
  // random token that travelled over `comm`. Every rank returns the same
  // verdict: when rank 0 cannot listen or some member cannot reach it, all
  // fail at once (rank 0's message names who) and *unreachable is set, so
  // a backend with a channel of its own can fall back to it together.
  static Status Create(Comm* comm, const std::string& bind_host, double timeout_s,
                       std::unique_ptr<ControlChannel>* out, bool* unreachable = nullptr);

  // `coordinator`: rank 0's address, for description().
  TcpChannel(int rank, int size, std::vector<rendezvous::UniqueFd> sockets,
             std::string coordinator = std::string());
  ~TcpChannel() override;
  TcpChannel(const TcpChannel&) = delete;
  TcpChannel& operator=(const TcpChannel&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int peer, std::string bytes) override;
  Status Receive(std::vector<ChannelMessage>* out) override;
  void PollFds(std::vector<PollFd>* out) const override;
  bool needs_polling() const override { return false; }
  std::string description() const override { return "TCP, coordinator at " + coordinator_; }

 private:
  struct Link {
    rendezvous::UniqueFd fd;  // invalid where there is no link (self; members to members)
    std::string in;           // bytes read, not yet a whole frame
    std::string out;          // frames not yet written
    size_t out_pos = 0;
    Status lost;  // set once the link broke
  };
  Status Flush(int peer);
  Status Fill(int peer, std::vector<ChannelMessage>* out);
  Status Lose(int peer, const std::string& why);

  int rank_;
  int size_;
  std::string coordinator_;
  std::vector<Link> links_;  // by peer rank
};

}  // namespace hvd
