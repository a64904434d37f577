#include "core/backends/shm/shm_setup.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backends/shm/shm_comm.h"
#include "core/common/logging.h"

namespace hvd {
namespace {

// The backends whose host-local collectives shared memory replaces, as
// messages name them (null: not one of them).
const char* Eligible(const Config& config, const Comm& comm) {
  if (!config.shared_memory || comm.size() < 2) return nullptr;
  if (std::strcmp(comm.backend_name(), "GLOO") == 0) return "Gloo";
  if (std::strcmp(comm.backend_name(), "MPI") == 0) return "MPI";
  return nullptr;
}

}  // namespace

Status TrySharedMemory(const Config& config, const std::shared_ptr<Comm>& backend,
                       const std::string& what, std::unique_ptr<Comm>* out) {
  out->reset();
  const char* name = Eligible(config, *backend);
  if (!name) return Status::OK();
  // No progress for this long is an error: as Gloo bounds its operations;
  // on MPI, whose calls have no bound, the operation deadline (0: none,
  // and a member's exit is still seen at once).
  double timeout = config.op_timeout_seconds;
  if (std::strcmp(name, "Gloo") == 0) {
    timeout =
        timeout > 0 ? std::min(config.peer_timeout_seconds, timeout) : config.peer_timeout_seconds;
  }
  std::unique_ptr<ShmComm> shm;
  std::string why;
  HVD_RETURN_IF_ERROR(ShmComm::Create(backend, timeout, ShmComm::kDefaultSlotBytes, &shm, &why));
  if (!shm) {
    HVD_LOG(kWarning) << what << ": host-local collectives stay on " << name << ": " << why
                      << " (HVD_SHARED_MEMORY=0 skips the attempt)";
    return Status::OK();
  }
  HVD_LOG(kDebug) << what << ": " << backend->size() << " ranks, host-local collectives "
                  << "through shared memory";
  *out = std::move(shm);
  return Status::OK();
}

Status MaybeSharedMemoryOnOneHost(const Config& config, const std::string& host_key,
                                  const std::string& tag, std::shared_ptr<Comm>* data) {
  Comm& comm = **data;
  if (!Eligible(config, comm)) return Status::OK();
  std::vector<std::string> hosts;
  HVD_RETURN_IF_ERROR(AllgatherBytes(comm, host_key, &hosts));
  if (std::count(hosts.begin(), hosts.end(), hosts[0]) != static_cast<long>(hosts.size())) {
    return Status::OK();  // several hosts: the hierarchy's local step uses it
  }
  std::unique_ptr<Comm> shm;
  HVD_RETURN_IF_ERROR(TrySharedMemory(config, *data, "process set " + tag, &shm));
  if (shm) *data = std::move(shm);
  return Status::OK();
}

}  // namespace hvd
