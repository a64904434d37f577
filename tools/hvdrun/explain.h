// `hvdrun --explain`: the data plane each rank of the job would build for
// the world (core/dataplane/plan.h), from the hosts, -np, the backend and
// the HVD_* settings, without starting it. libhvd logs the same lines at
// HVD_LOG_LEVEL=info.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"
#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/options.h"

namespace hvd {
namespace run {

// One line per group of ranks with the same plan ("ranks 0-3: process set
// 0 (gloo, ...): ..."). The tuning flags count as they would for the ranks.
Status ExplainReport(const Options& options, const std::vector<RankPlacement>& ranks,
                     std::string* out);

}  // namespace run
}  // namespace hvd
