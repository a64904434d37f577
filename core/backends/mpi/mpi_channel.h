// A ControlChannel over an MPI communicator of its own (a duplicate, so its
// messages never match data traffic or the application's). Sends are
// MPI_Isend with the bytes kept until they complete; receiving probes for
// any source (matched probes, safe next to other threads' MPI calls). MPI
// cannot wake a sleeping thread: where every rank of the channel shares
// this host's network namespace, a message to a rank that sleeps is
// followed by a datagram on its WakeSocket, whose descriptor the set's
// loop polls, so a rank that waits for a slow peer sleeps in the kernel
// instead of waking to look every 0.2-1 ms (with ranks out of step, 5-7%
// of a training rank's core). Elsewhere the loop calls Receive in naps
// while it expects a message.
//
// Open MPI reuses a freed communicator's context id for the next duplicate,
// and a message still in flight on the old one (a member's last report,
// sent as the job shut down) would then match the new channel after
// hvd_shutdown + hvd_init, or in a new process set's. Each channel
// therefore uses a tag of its own, drawn by its rank 0 and broadcast when it
// is made, and is closed with a handshake that leaves nothing in flight
// before its communicator is freed.
#pragma once

#include <mpi.h>

#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/control_channel.h"
#include "core/backends/mpi/wake_socket.h"

namespace hvd {

class MpiChannel : public ControlChannel {
 public:
  // Takes ownership of `comm` (freed in the destructor). Collective over it.
  // With `try_wake`, the ranks open wake sockets and use them if every rank
  // reaches the ones it sends to; otherwise the channel is polled.
  static Status Create(MPI_Comm comm, bool try_wake, std::unique_ptr<ControlChannel>* out);
  MpiChannel(MPI_Comm comm, int tag, std::unique_ptr<WakeSocket> wake);
  ~MpiChannel() override;
  MpiChannel(const MpiChannel&) = delete;
  MpiChannel& operator=(const MpiChannel&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int peer, std::string bytes) override;
  Status Receive(std::vector<ChannelMessage>* out) override;
  void PollFds(std::vector<PollFd>* out) const override;
  // A send that has not completed needs this rank's MPI calls to progress;
  // a wake-up that found no message yet, a few more looks.
  bool needs_polling() const override {
    // The clock only while a wake-up found nothing (poll_until_ is set).
    return size_ > 1 && (!wake_ || !sending_.empty() ||
                         (poll_until_ != std::chrono::steady_clock::time_point{} &&
                          std::chrono::steady_clock::now() < poll_until_));
  }
  bool spin_before_sleep() const override { return size_ > 1; }
  bool PrepareToSleep() override;
  void Awake() override;
  std::string description() const override {
    return wake_ ? "MPI messages, woken by a local socket" : "MPI messages, polled";
  }

 private:
  struct Outgoing {
    std::string bytes;
    MPI_Request request;
    int peer;
  };
  // Forgets completed sends; with `wake`, wakes their receivers again (a
  // message that left only now, after the first wake-up was read).
  Status ReapSends(bool wake);
  // Appends every message that has arrived (probes until none).
  Status ReceiveArrived(std::vector<ChannelMessage>* out);
  bool CloseHandshake(std::chrono::steady_clock::time_point until);

  MPI_Comm comm_;
  int tag_;
  int rank_ = 0;
  int size_ = 1;
  std::list<Outgoing> sending_;       // stable addresses while MPI reads them
  bool broken_ = false;               // an MPI call failed: no close handshake
  std::unique_ptr<WakeSocket> wake_;  // null: the loop polls
  std::chrono::steady_clock::time_point poll_until_{};
};

}  // namespace hvd
