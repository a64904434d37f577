// Timeline activities of the executors: one span per tensor of a response
// while a scope runs ("MPI_ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER", ...).
#pragma once

#include <string>

#include "core/backends/comm.h"
#include "core/coordination/message.h"

namespace hvd {

class Timeline;

// Records one timeline activity for every tensor of a response while in
// scope (nothing when the timeline is off).
class ScopedActivity {
 public:
  ScopedActivity(Timeline* timeline, const Response& r, const std::string& activity);
  ~ScopedActivity();
  ScopedActivity(const ScopedActivity&) = delete;
  ScopedActivity& operator=(const ScopedActivity&) = delete;

 private:
  Timeline* timeline_;
  const Response& response_;
};

// "MPI_ALLREDUCE", "GLOO_ALLGATHER", ...
std::string BackendActivity(const Comm& comm, OpType type);

}  // namespace hvd
