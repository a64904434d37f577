// Worker side of elastic mode (HVD_ELASTIC=1, set by `hvdrun --min-np ...`).
// The launcher publishes numbered *rounds* in its rendezvous store, each
// giving every live worker (named by HVD_WORKER_ID) its rank and size. Each
// hvd_init joins the newest round published after the one this process
// joined last, so hvd_shutdown + hvd_init moves a worker to the next round.
#pragma once

#include <cstdint>
#include <string>

#include "core/common/launch_env.h"
#include "core/common/status.h"

namespace hvd {

class KVClient;

namespace elastic {

struct Assignment {
  int64_t round = -1;
  int rank = 0;
  int size = 1;
};

// Waits (up to timeout_seconds: HVD_ELASTIC_TIMEOUT) for a round newer than
// the last joined one and reads the place of worker `worker_id`
// (HVD_WORKER_ID) in it. When this worker already joined a round, it first
// asks the launcher for a new one (a failure the launcher cannot see, e.g. a
// timeout, must not leave the workers waiting for a round that never comes).
// Remembers the round. A worker waiting for its first round first marks
// itself ready (the launcher adds replacements only once they are); every
// worker counts itself in the round's joined counter once it has its place.
Status JoinNextRound(KVClient* client, const std::string& worker_id, double timeout_seconds,
                     Assignment* out);

// Starts (once per process) a thread that bumps this worker's heartbeat
// key in the store every liveness/5 s (clamped to 0.1-1 s), so hvdrun can
// tell a stopped or frozen worker from a slow one. liveness 0: no heartbeat.
Status StartHeartbeat(const RendezvousEndpoint& store, const std::string& worker_id,
                      double liveness_seconds);

// The round joined by the last successful JoinNextRound; -1 before.
int64_t CurrentRound();

// Whether the launcher published a round newer than CurrentRound(): hosts
// or workers were added or lost. false when `enabled` (HVD_ELASTIC) is not
// set; `store` is where to ask.
Status HostsUpdated(bool enabled, const RendezvousEndpoint& store, bool* updated);

}  // namespace elastic
}  // namespace hvd
