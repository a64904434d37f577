#include "core/backends/shm/shm_setup.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backends/shm/shm_comm.h"
#include "core/common/logging.h"

namespace hvd {

Status TrySharedMemory(const Config& config, const std::shared_ptr<Comm>& backend,
                       const std::string& what, std::unique_ptr<Comm>* out) {
  out->reset();
  if (!config.shared_memory || backend->size() < 2 ||
      std::strcmp(backend->backend_name(), "GLOO") != 0) {
    return Status::OK();
  }
  // As Gloo bounds its operations: no progress for this long is an error.
  double timeout = config.gloo_timeout_seconds;
  if (config.op_timeout_seconds > 0) timeout = std::min(timeout, config.op_timeout_seconds);
  std::unique_ptr<ShmComm> shm;
  std::string why;
  HVD_RETURN_IF_ERROR(ShmComm::Create(backend, timeout, ShmComm::kDefaultSlotBytes, &shm, &why));
  if (!shm) {
    HVD_LOG(kWarning) << what << ": host-local collectives stay on Gloo: " << why
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
  if (!config.shared_memory || comm.size() < 2 || std::strcmp(comm.backend_name(), "GLOO") != 0) {
    return Status::OK();
  }
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
