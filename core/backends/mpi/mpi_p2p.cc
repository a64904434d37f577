// Point-to-point messages over MPI: MPI_Isend/MPI_Irecv on the p2p engine's
// own communicator (a duplicate of the world's), completed by MPI_Test.
// The MPI tag is the stream (process set and user tag), so MPI's
// non-overtaking rule gives the order per (peer, set, tag).
#include <climits>
#include <string>

#include "core/backends/mpi/mpi_comm.h"
#include "core/backends/registry.h"

namespace hvd {
namespace {

std::string ErrorText(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, static_cast<size_t>(len));
}

class MpiP2PRequest : public P2PRequest {
 public:
  MpiP2PRequest(bool recv, int64_t bytes, int peer) : recv_(recv), bytes_(bytes), peer_(peer) {}
  ~MpiP2PRequest() override {
    if (req_ != MPI_REQUEST_NULL) Abort();
  }

  MPI_Request* request() { return &req_; }

  bool Test(Status* status) override {
    if (req_ == MPI_REQUEST_NULL) {
      *status = aborted_ ? Status::Timeout("aborted") : Status::OK();
      return true;
    }
    int flag = 0;
    MPI_Status st;
    const int rc = MPI_Test(&req_, &flag, &st);
    if (rc != MPI_SUCCESS) {
      int cls = 0;
      MPI_Error_class(rc, &cls);
      req_ = MPI_REQUEST_NULL;
      if (cls == MPI_ERR_TRUNCATE) {
        *status = Status(Code::kMismatch, "the message from rank " + std::to_string(peer_) +
                                              " is larger than the receive buffer (" +
                                              std::to_string(bytes_) + " bytes)");
      } else {
        *status = Status::Backend(std::string("MPI ") + (recv_ ? "Irecv" : "Isend") +
                                  " failed: " + ErrorText(rc));
      }
      return true;
    }
    if (!flag) return false;
    *status = Status::OK();
    if (recv_) {
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (count != bytes_) {
        *status =
            Status(Code::kMismatch, "the message from rank " + std::to_string(peer_) + " has " +
                                        std::to_string(count) + " bytes, the receive buffer " +
                                        std::to_string(bytes_));
      }
    }
    return true;
  }

  void Abort() override {
    if (req_ == MPI_REQUEST_NULL) return;
    aborted_ = true;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      req_ = MPI_REQUEST_NULL;
      return;
    }
    // A receive that never matched can be cancelled; a send is left to
    // complete (or not) in the background.
    if (recv_) MPI_Cancel(&req_);
    MPI_Request_free(&req_);
    req_ = MPI_REQUEST_NULL;
  }

 private:
  bool recv_;
  int64_t bytes_;
  int peer_;
  bool aborted_ = false;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

Status CheckP2P(const char* what, int64_t bytes, int peer, int rank, int size) {
  if (!MpiThreadsSupported()) {
    return Status::Unsupported(
        std::string("MPI ") + what +
        ": point-to-point messages over MPI need MPI_THREAD_MULTIPLE (unset "
        "HVD_MPI_THREADS_DISABLE, or initialise MPI with it before hvd_init)");
  }
  if (peer < 0 || peer >= size || peer == rank) {
    return Status::Invalid(std::string("MPI ") + what + ": peer " + std::to_string(peer) +
                           " is not another rank of " + std::to_string(size));
  }
  if (bytes < 0 || bytes > INT_MAX) {
    return Status::Unsupported(std::string("MPI ") + what + ": " + std::to_string(bytes) +
                               " bytes exceed 2^31-1, which MPI's int counts cannot express; "
                               "send the tensor in pieces");
  }
  return Status::OK();
}

}  // namespace

Status MpiComm::Isend(const void* buf, int64_t bytes, int peer, int64_t stream,
                      std::unique_ptr<P2PRequest>* out) {
  HVD_RETURN_IF_ERROR(CheckP2P("Isend", bytes, peer, rank_, size_));
  auto r = std::make_unique<MpiP2PRequest>(false, bytes, peer);
  HVD_RETURN_IF_ERROR(Check(MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, peer,
                                      static_cast<int>(stream), comm_, r->request()),
                            "Isend"));
  *out = std::move(r);
  return Status::OK();
}

Status MpiComm::Irecv(void* buf, int64_t bytes, int peer, int64_t stream,
                      std::unique_ptr<P2PRequest>* out) {
  HVD_RETURN_IF_ERROR(CheckP2P("Irecv", bytes, peer, rank_, size_));
  auto r = std::make_unique<MpiP2PRequest>(true, bytes, peer);
  HVD_RETURN_IF_ERROR(Check(MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, peer,
                                      static_cast<int>(stream), comm_, r->request()),
                            "Irecv"));
  *out = std::move(r);
  return Status::OK();
}

}  // namespace hvd
