#include "core/backends/mpi/mpi_channel.h"

#include <chrono>
#include <climits>
#include <random>
#include <thread>

namespace hvd {
namespace {

constexpr int kCloseTagOffset = 16384;
// How long a rank polls after a wake-up that found no message.
constexpr std::chrono::milliseconds kWokenPolling{10};

Status MpiError(int rc, const char* what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::Backend(std::string("MPI ") + what + " (control channel) failed: " +
                         std::string(msg, static_cast<size_t>(len)));
}

// True on every rank when all ranks agree on `ok` (MPI_MIN over ints).
bool AllAgree(MPI_Comm comm, bool ok) {
  int v = ok ? 1 : 0;
  return MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS && v == 1;
}

// Every rank's wake socket, or none: each rank binds one, rank 0 sends
// every member a first wake-up with the page of flags and each member
// sends rank 0 one (the channel's only routes), and the sockets are kept
// only if every rank got what was sent to it. Ranks in other network
// namespaces (containers, the test's namespace hosts) cannot see each
// other's abstract names, and their channel is polled. Collective.
std::unique_ptr<WakeSocket> OpenWakeSockets(MPI_Comm comm, uint64_t token) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::unique_ptr<WakeSocket> wake;
  if (!AllAgree(comm, WakeSocket::Open(token, rank, size, &wake).ok())) return nullptr;
  const bool sent = wake->Introduce();
  // A datagram is queued at the receiver when sendmsg returns.
  if (MPI_Barrier(comm) != MPI_SUCCESS) return nullptr;
  if (!AllAgree(comm, wake->Introduced() && sent)) return nullptr;
  return wake;
}

}  // namespace

Status MpiChannel::Create(MPI_Comm comm, bool try_wake, std::unique_ptr<ControlChannel>* out) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Any tag in [1, 16383], apart from the last one this process drew; the
  // close handshake uses tag + 16384 (at most 32767, the least MPI_TAG_UB
  // the standard allows). The token names the channel's wake sockets.
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static int last = 0;
  struct {
    uint64_t token;
    int32_t tag;
  } shared{0, 0};
  if (rank == 0) {
    do {
      shared.tag = std::uniform_int_distribution<int>(1, kCloseTagOffset - 1)(rng);
    } while (shared.tag == last);
    last = shared.tag;
    shared.token = rng();
  }
  const int rc = MPI_Bcast(&shared, sizeof(shared), MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    return MpiError(rc, "Bcast of the tag");
  }
  std::unique_ptr<WakeSocket> wake;
  if (size > 1 && AllAgree(comm, try_wake)) wake = OpenWakeSockets(comm, shared.token);
  *out = std::make_unique<MpiChannel>(comm, shared.tag, std::move(wake));
  return Status::OK();
}

MpiChannel::MpiChannel(MPI_Comm comm, int tag, std::unique_ptr<WakeSocket> wake)
    : comm_(comm), tag_(tag), wake_(std::move(wake)) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void MpiChannel::PollFds(std::vector<PollFd>* out) const {
  if (wake_) out->push_back({wake_->fd(), false});
}

bool MpiChannel::PrepareToSleep() {
  if (!wake_ || needs_polling()) return true;  // a nap: nobody need wake it
  wake_->SetSleeping(true);
  // The last look, after the flag: a message sent before a sender could
  // see the flag is found here (two probes: see Receive).
  for (int i = 0; i < 2; ++i) {
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, tag_, comm_, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      wake_->SetSleeping(false);
      return false;
    }
  }
  return true;
}

void MpiChannel::Awake() {
  if (wake_) wake_->SetSleeping(false);
}

MpiChannel::~MpiChannel() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // MPI must not free a communicator that still has messages in flight:
  // Open MPI reuses its context id, and a late fragment then lands in the
  // next communicator out of sequence (lost messages, crashes in
  // mca_pml_ob1_add_comm). Without a clean close the communicator is left
  // allocated instead.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  if (broken_ || !CloseHandshake(until)) {
    for (auto& o : sending_) {
      if (o.request != MPI_REQUEST_NULL) MPI_Request_free(&o.request);
    }
    return;
  }
  MPI_Comm_free(&comm_);
}

// Every member's last message to rank 0 is an empty one on the close tag,
// and rank 0 answers each member with one once it has all of them. Messages
// between two ranks arrive in the order they were sent, so afterwards
// nothing is in flight either way, and what arrived unread is dropped.
bool MpiChannel::CloseHandshake(std::chrono::steady_clock::time_point until) {
  auto send_empty = [this](int peer) {
    sending_.push_back(Outgoing{std::string(), MPI_REQUEST_NULL, peer});
    return MPI_Isend(nullptr, 0, MPI_BYTE, peer, tag_ + kCloseTagOffset, comm_,
                     &sending_.back().request) == MPI_SUCCESS;
  };
  if (rank_ != 0 && !send_empty(0)) return false;
  int empties = 0;
  const int expected = rank_ == 0 ? size_ - 1 : (size_ > 1 ? 1 : 0);
  while (empties < expected) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(rank_ == 0 ? MPI_ANY_SOURCE : 0, tag_ + kCloseTagOffset, comm_, &flag, &msg,
                    &st) != MPI_SUCCESS) {
      return false;
    }
    if (!flag) {
      if (std::chrono::steady_clock::now() > until || !ReapSends(false).ok()) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (MPI_Mrecv(nullptr, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    ++empties;
  }
  for (int peer = 1; rank_ == 0 && peer < size_; ++peer) {
    if (!send_empty(peer)) return false;
  }
  while (!sending_.empty()) {
    if (!ReapSends(false).ok() || std::chrono::steady_clock::now() > until) return false;
    if (!sending_.empty()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &msg, &st) != MPI_SUCCESS) {
      return false;
    }
    if (!flag) return true;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::string sink(static_cast<size_t>(count), '\0');
    if (MPI_Mrecv(count ? &sink[0] : nullptr, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      return false;
    }
  }
}

Status MpiChannel::Send(int peer, std::string bytes) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Unsupported("a negotiation message exceeds 2^31-1 bytes");
  }
  sending_.push_back(Outgoing{std::move(bytes), MPI_REQUEST_NULL, peer});
  Outgoing& o = sending_.back();
  const int rc = MPI_Isend(o.bytes.data(), static_cast<int>(o.bytes.size()), MPI_BYTE, peer, tag_,
                           comm_, &o.request);
  if (rc != MPI_SUCCESS) {
    sending_.pop_back();
    broken_ = true;
    return MpiError(rc, "Isend");
  }
  Status s = ReapSends(false);
  // After MPI_Isend: the receiver that wakes finds the message (or, where
  // it has not left yet, is woken again when it completes).
  if (wake_) wake_->Wake(peer);
  return s;
}

Status MpiChannel::ReapSends(bool wake) {
  for (auto it = sending_.begin(); it != sending_.end();) {
    int done = 0;
    const int rc = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      broken_ = true;
      return MpiError(rc, "Test");
    }
    if (!done) {
      ++it;
      continue;
    }
    if (wake && wake_) wake_->Wake(it->peer);
    it = sending_.erase(it);
  }
  return Status::OK();
}

Status MpiChannel::Receive(std::vector<ChannelMessage>* out) {
  // Read the wake-ups first: one that comes after this is for a message
  // the probes below may miss, and wakes the loop again.
  const bool woken = wake_ && wake_->Drain() > 0;
  const size_t before = out->size();
  HVD_RETURN_IF_ERROR(ReceiveArrived(out));
  if (woken && out->size() == before) {
    // A probe may queue what arrived before it matches it (Open MPI's
    // ob1): the next one finds it. If even that does not, the message is
    // still on its way (or the wake-up was for one already read): poll a
    // while rather than sleep past it.
    HVD_RETURN_IF_ERROR(ReceiveArrived(out));
    if (out->size() == before) poll_until_ = std::chrono::steady_clock::now() + kWokenPolling;
  }
  return sending_.empty() ? Status::OK() : ReapSends(true);
}

Status MpiChannel::ReceiveArrived(std::vector<ChannelMessage>* out) {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, tag_, comm_, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) {
      broken_ = true;
      return MpiError(rc, "Improbe");
    }
    if (!flag) return Status::OK();
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    ChannelMessage m;
    m.from = st.MPI_SOURCE;
    m.bytes.resize(static_cast<size_t>(count));
    rc = MPI_Mrecv(&m.bytes[0], count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      broken_ = true;
      return MpiError(rc, "Mrecv");
    }
    out->push_back(std::move(m));
    poll_until_ = {};
  }
}

}  // namespace hvd
