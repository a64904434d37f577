// Where hvd puts host-local collectives on shared memory (shm_comm.h): Gloo
// and MPI Comms whose members are all on this host (a whole set on one
// host, or the host-local step of hierarchical allreduce), unless
// HVD_SHARED_MEMORY=0. On MPI too: Open MPI's allreduce inside a host is
// shared memory already, but its waits busy-poll on cores the other ranks
// need, where the segment's barriers sleep (docs/benchmarks.md).
#pragma once

#include <memory>
#include <string>

#include "core/backends/comm.h"
#include "core/common/config.h"

namespace hvd {

// Collective over `backend`, whose members are all on this host. *out: a
// ShmComm over it, or null to keep `backend` (not Gloo or MPI, switched off, or
// the segment could not be set up: then a warning names why, and every
// member keeps the backend together). `what` names the group in messages.
Status TrySharedMemory(const Config& config, const std::shared_ptr<Comm>& backend,
                       const std::string& what, std::unique_ptr<Comm>* out);

// Collective over *data (a set's Comm): wraps it where every member shares
// one host (`host_key`, as the hierarchy groups hosts).
Status MaybeSharedMemoryOnOneHost(const Config& config, const std::string& host_key,
                                  const std::string& tag, std::shared_ptr<Comm>* data);

}  // namespace hvd
