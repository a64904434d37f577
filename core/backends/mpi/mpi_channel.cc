#include "core/backends/mpi/mpi_channel.h"

#include <chrono>
#include <climits>
#include <random>
#include <thread>

namespace hvd {
namespace {

constexpr int kCloseTagOffset = 16384;

Status MpiError(int rc, const char* what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::Backend(std::string("MPI ") + what + " (control channel) failed: " +
                         std::string(msg, static_cast<size_t>(len)));
}

}  // namespace

Status MpiChannel::Create(MPI_Comm comm, std::unique_ptr<ControlChannel>* out) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Any tag in [1, 16383], apart from the last one this process drew; the
  // close handshake uses tag + 16384 (at most 32767, the least MPI_TAG_UB
  // the standard allows).
  static thread_local std::mt19937 rng(std::random_device{}());
  static int last = 0;
  int tag = 0;
  if (rank == 0) {
    do {
      tag = std::uniform_int_distribution<int>(1, kCloseTagOffset - 1)(rng);
    } while (tag == last);
    last = tag;
  }
  const int rc = MPI_Bcast(&tag, 1, MPI_INT, 0, comm);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    return MpiError(rc, "Bcast of the tag");
  }
  *out = std::make_unique<MpiChannel>(comm, tag);
  return Status::OK();
}

MpiChannel::MpiChannel(MPI_Comm comm, int tag) : comm_(comm), tag_(tag) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
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
    sending_.push_back(Outgoing{std::string(), MPI_REQUEST_NULL});
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
      if (std::chrono::steady_clock::now() > until || !ReapSends().ok()) return false;
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
    if (!ReapSends().ok() || std::chrono::steady_clock::now() > until) return false;
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
  sending_.push_back(Outgoing{std::move(bytes), MPI_REQUEST_NULL});
  Outgoing& o = sending_.back();
  const int rc = MPI_Isend(o.bytes.data(), static_cast<int>(o.bytes.size()), MPI_BYTE, peer, tag_,
                           comm_, &o.request);
  if (rc != MPI_SUCCESS) {
    sending_.pop_back();
    broken_ = true;
    return MpiError(rc, "Isend");
  }
  return ReapSends();
}

Status MpiChannel::ReapSends() {
  for (auto it = sending_.begin(); it != sending_.end();) {
    int done = 0;
    const int rc = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      broken_ = true;
      return MpiError(rc, "Test");
    }
    it = done ? sending_.erase(it) : std::next(it);
  }
  return Status::OK();
}

Status MpiChannel::Receive(std::vector<ChannelMessage>* out) {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, tag_, comm_, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) {
      broken_ = true;
      return MpiError(rc, "Improbe");
    }
    if (!flag) break;
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
  }
  return sending_.empty() ? Status::OK() : ReapSends();
}

}  // namespace hvd
