// A ControlChannel over an MPI communicator of its own (a duplicate, so its
// messages never match data traffic or the application's). Sends are
// MPI_Isend with the bytes kept until they complete; receiving probes for
// any source (matched probes, safe next to other threads' MPI calls). MPI
// cannot wake a sleeping thread, so the set's loop calls Receive while it
// expects a message and sleeps otherwise.
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

namespace hvd {

class MpiChannel : public ControlChannel {
 public:
  // Takes ownership of `comm` (freed in the destructor). Collective over it.
  static Status Create(MPI_Comm comm, std::unique_ptr<ControlChannel>* out);
  MpiChannel(MPI_Comm comm, int tag);
  ~MpiChannel() override;
  MpiChannel(const MpiChannel&) = delete;
  MpiChannel& operator=(const MpiChannel&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int peer, std::string bytes) override;
  Status Receive(std::vector<ChannelMessage>* out) override;
  void PollFds(std::vector<PollFd>*) const override {}
  bool needs_polling() const override { return size_ > 1; }
  std::string description() const override { return "MPI messages, polled"; }

 private:
  struct Outgoing {
    std::string bytes;
    MPI_Request request;
  };
  Status ReapSends();
  bool CloseHandshake(std::chrono::steady_clock::time_point until);

  MPI_Comm comm_;
  int tag_;
  int rank_ = 0;
  int size_ = 1;
  std::list<Outgoing> sending_;  // stable addresses while MPI reads them
  bool broken_ = false;          // an MPI call failed: no close handshake
};

}  // namespace hvd
