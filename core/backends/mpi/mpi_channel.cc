#include "core/backends/mpi/mpi_channel.h"

#include <chrono>
#include <climits>
#include <random>
#include <thread>

namespace hvd {
namespace {

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
  // Any tag in [1, 32767] (the least MPI_TAG_UB the standard allows), apart
  // from the last one this process drew.
  static thread_local std::mt19937 rng(std::random_device{}());
  static int last = 0;
  int tag = 0;
  if (rank == 0) {
    do {
      tag = std::uniform_int_distribution<int>(1, 32767)(rng);
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
  // Sends still in flight go to peers that stopped listening (they shut
  // down): give them a moment, then let MPI finish them on its own.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (!sending_.empty() && ReapSends().ok() && !sending_.empty() &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (auto& o : sending_) MPI_Request_free(&o.request);
  // What already arrived and was never read is dropped with the channel.
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &msg, &st) != MPI_SUCCESS || !flag) {
      break;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::string sink(static_cast<size_t>(count), '\0');
    MPI_Mrecv(&sink[0], count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&comm_);
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
    return MpiError(rc, "Isend");
  }
  return ReapSends();
}

Status MpiChannel::ReapSends() {
  for (auto it = sending_.begin(); it != sending_.end();) {
    int done = 0;
    const int rc = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return MpiError(rc, "Test");
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
    if (rc != MPI_SUCCESS) return MpiError(rc, "Improbe");
    if (!flag) break;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    ChannelMessage m;
    m.from = st.MPI_SOURCE;
    m.bytes.resize(static_cast<size_t>(count));
    rc = MPI_Mrecv(&m.bytes[0], count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return MpiError(rc, "Mrecv");
    out->push_back(std::move(m));
  }
  return sending_.empty() ? Status::OK() : ReapSends();
}

}  // namespace hvd
