// Runs the ranks of a job to completion: relays their output with prefixes,
// forwards SIGINT/SIGTERM/SIGHUP, and stops everyone when one rank fails.
#pragma once

#include <string>
#include <vector>

namespace hvd {
namespace run {

struct RankLaunch {
  int rank = 0;
  std::string host;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // complete environment, "K=V"
};

// Starts every rank and returns hvdrun's exit code: 0 when all ranks exit 0,
// the first failing rank's code (128+signal when killed), or 128+signal when
// hvdrun itself was interrupted (BlockJobSignals() in child_io.h first).
// After the first failure the others get SIGTERM (and SIGCONT, so that a
// stopped rank acts on it), then SIGKILL after grace_seconds. A non-empty output_dir (which must exist) also gets each
// rank's output in output_dir/rank.N/{stdout,stderr}.
int RunJob(const std::vector<RankLaunch>& ranks, double grace_seconds, bool verbose,
           const std::string& output_dir);

}  // namespace run
}  // namespace hvd
