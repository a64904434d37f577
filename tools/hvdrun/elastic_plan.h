// Pure decisions of the elastic driver, kept apart from processes and
// sockets so they can be unit-tested: where new workers go, and the ranks
// of one round.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/hvdrun/hosts.h"

namespace hvd {
namespace run {

struct LiveWorker {
  int id = 0;
  std::string host;
};

// One worker's place in a round (Horovod's definitions of local and cross
// ranks; the runtime recomputes them from HVD_HOSTNAME, they are published
// for tools and logs).
struct RoundSlot {
  int worker_id = 0;
  std::string host;
  int rank = 0;
  int size = 0;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;
  int cross_size = 0;
};

// Ranks follow worker ids: a worker started earlier always gets a lower rank
// than one started later, so rank 0 (which broadcasts the state at every
// sync) is the oldest survivor, never a fresh worker without the state.
std::vector<RoundSlot> PlanRound(std::vector<LiveWorker> workers);

// "rank size local_rank local_size cross_rank cross_size": the value of
// elastic/<n>/worker/<id> (see core/rendezvous/elastic_keys.h).
std::string AssignmentValue(const RoundSlot& slot);

// Hosts (in discovery order) for new workers: every free slot of a host that
// is not blacklisted, until `running` workers in all reach max_np.
std::vector<std::string> PlanSpawns(const std::vector<HostSlots>& discovered,
                                    const std::map<std::string, int>& running_per_host,
                                    const std::map<std::string, bool>& blacklisted, int running,
                                    int max_np);

// Parses the output of a discovery script: one "host:slots" (or "host") per
// line; blank lines and '#' comments are skipped. A host listed twice is an
// error.
Status ParseDiscoveryOutput(const std::string& text, std::vector<HostSlots>* out);

}  // namespace run
}  // namespace hvd
