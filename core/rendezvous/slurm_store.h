// The rendezvous store of a job that srun started without PMI (launch_env.h's
// SlurmStep): there is no hvdrun, so task 0 hosts the store in its own
// process, on the first node of SLURM_STEP_NODELIST, and the other tasks
// find it through a file that only the job's user can read.
//
// How the secret stays private: task 0 draws a random 32-byte secret, starts
// the store on an ephemeral port, and writes "port secret" to
// <dir>/<job id>.<step id>, mode 0600, in a directory of mode 0700 that the
// user owns (dir: HVD_SLURM_RENDEZVOUS_DIR, else $HOME/.hvd/slurm, which the
// job's nodes share like the home directory). The tasks read it there; a
// directory or file that another user could read or that another user owns
// is refused. Every store message is authenticated with that secret
// (kv_protocol.h), so other users on the network can neither read nor inject
// addresses. Task 0 deletes the file as soon as every task has joined.
// The boundary is the job's Unix user, as for hvdrun's HVD_RENDEZVOUS_SECRET
// (which sits in the environment of the user's processes).
#pragma once

#include <memory>
#include <string>

#include "core/common/launch_env.h"
#include "core/common/status.h"
#include "core/rendezvous/kv_client.h"

namespace hvd {

// Task 0 (rank == 0) starts the store (once per process; a later hvd_init
// reuses it) and publishes it; every task then connects to it within
// timeout_seconds. `host` is this task's HostKey(). *endpoint names the store.
Status ConnectSlurmStore(const SlurmStep& step, const std::string& host, int rank,
                         double timeout_seconds, RendezvousEndpoint* endpoint,
                         std::unique_ptr<KVClient>* client);

// Task 0, once every task has joined: the file is no longer needed.
void RemoveSlurmStoreFile(const SlurmStep& step);

}  // namespace hvd
