// Runs the user's host discovery script (`--host-discovery-script`) and
// parses what it prints: one "host:slots" per line.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"
#include "tools/hvdrun/hosts.h"

namespace hvd {
namespace run {

// Runs `sh -c script` with the given environment and waits up to
// timeout_seconds for it to exit (then kills it: a hung script must not stall
// the driver, which also supervises the workers). Fails on a non-zero exit,
// naming the code and the script's stderr.
Status DiscoverHosts(const std::string& script, const std::vector<std::string>& env,
                     double timeout_seconds, std::vector<HostSlots>* out);

}  // namespace run
}  // namespace hvd
