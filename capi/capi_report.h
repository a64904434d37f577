// Shared by the C layer's translation units: turns a Status into the status
// code and sets the thread's hvd_last_error() (defined in capi.cc).
#pragma once

#include "core/common/status.h"
#include "hvd/hvd.h"

namespace hvd {
namespace capi {
hvd_status ReportStatus(const Status& s);
}  // namespace capi
}  // namespace hvd
