// Before starting a job on remote hosts, check that the remote shell reaches
// each of them, so a typo in -H fails fast with the host named instead of
// as a rendezvous timeout minutes later.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"
#include "tools/hvdrun/command.h"

namespace hvd {
namespace run {

// Runs `<remote shell> HOST true` for every host in parallel.
Status CheckHostsReachable(const RemoteShell& shell, const std::vector<std::string>& hosts,
                           double timeout_seconds);

}  // namespace run
}  // namespace hvd
