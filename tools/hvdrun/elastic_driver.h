// The elastic driver (hvdrun --min-np/--max-np/--host-discovery-script or
// --elastic): keeps the job's workers running across failures and host
// changes. It discovers hosts every second, starts one worker per free slot
// (up to --max-np), and publishes numbered rounds in the rendezvous store
// (core/rendezvous/elastic_keys.h) whenever the set of live workers changes; workers
// join a round at hvd_init. A round that loses a worker is published at once
// with the survivors; workers started later are added once they are ready
// and the current round is joined; a worker whose store heartbeat stops for
// HVD_ELASTIC_LIVENESS_SECONDS is killed. See docs/elastic.md.
#pragma once

#include <string>
#include <vector>

#include "tools/hvdrun/command.h"
#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/job_env.h"
#include "tools/hvdrun/options.h"

namespace hvd {
namespace run {

struct ElasticJob {
  Options options;
  std::vector<HostSlots> fixed_hosts;  // when there is no discovery script
  JobFacts facts;                      // rendezvous address, port, secret (hex)
  std::string secret;                  // raw secret, for the driver's own store client
  RemoteShell shell;
  std::string cwd;
  std::vector<std::string> environment;  // hvdrun's, "K=V"
};

// Runs the job to its end and returns hvdrun's exit code: 0 when the workers
// of the last round all exit 0; the failing worker's code when a worker fails
// after another has already finished or when no worker is left; 1 when fewer
// than --min-np workers remain for --elastic-timeout; 128+signal when hvdrun
// was interrupted. Call BlockJobSignals() (child_io.h) before any thread starts.
int RunElasticJob(const ElasticJob& job);

}  // namespace run
}  // namespace hvd
