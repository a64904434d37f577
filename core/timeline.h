// Chrome trace-event timeline (chrome://tracing, Perfetto). Each tensor is a
// trace "process"; negotiation and the operation with its nested activities
// are duration events. Calls are cheap no-ops while the timeline is off; the
// file is written by a writer thread and is valid JSON after every write.
// Rank 0 writes; on other ranks Start succeeds and records nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace hvd {

class TimelineWriter;  // timeline.cc

class Timeline {
 public:
  Timeline();
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  Status Start(const std::string& path, bool mark_cycles, int rank);
  void Stop();
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // Coordinator side: a tensor's negotiation, with a tick per ready rank.
  void NegotiateStart(const std::string& tensor, OpType type);
  void NegotiateRankReady(const std::string& tensor, int rank);
  void NegotiateEnd(const std::string& tensor);

  // Execution: the operation ("ALLREDUCE") and activities nested in it
  // ("QUEUE", "MEMCPY_IN_FUSION_BUFFER", "MPI_ALLREDUCE", ...).
  void OpStart(const std::string& tensor, OpType type);
  // `at` lets an activity begin in the past (QUEUE starts at submission).
  void ActivityStart(const std::string& tensor, const std::string& activity,
                     std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now());
  void ActivityEnd(const std::string& tensor);
  void OpEnd(const std::string& tensor, DataType dtype, const std::vector<int64_t>& shape);

  void MarkCycleStart();

 private:
  std::atomic<bool> active_{false};
  std::unique_ptr<TimelineWriter> writer_;
};

}  // namespace hvd
