#include "core/ops/scoped_activity.h"

#include "core/observability/timeline.h"

namespace hvd {

ScopedActivity::ScopedActivity(Timeline* timeline, const Response& r, const std::string& activity)
    : timeline_(timeline && timeline->active() ? timeline : nullptr), response_(r) {
  if (!timeline_) return;
  for (const auto& name : response_.names) timeline_->ActivityStart(name, activity);
}

ScopedActivity::~ScopedActivity() {
  if (!timeline_) return;
  for (const auto& name : response_.names) timeline_->ActivityEnd(name);
}

std::string BackendActivity(const Comm& comm, OpType type) {
  return std::string(comm.backend_name()) + "_" + OpTypeUpperName(type);
}

}  // namespace hvd
