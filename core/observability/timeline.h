// Chrome trace-event timeline (chrome://tracing, Perfetto). Each tensor is a
// trace "process"; negotiation and the operation with its nested activities
// are duration events. Calls are cheap no-ops while the timeline is off; the
// file is written by a writer thread and is valid JSON after every write.
// Rank 0 writes; on other ranks Start succeeds and records nothing.
// Timestamps are microseconds of the steady clock since Start. Start while a
// file is open closes that file first. The vocabulary is in docs/timeline.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

class TimelineWriter;  // timeline_writer.h
struct TraceEvent;

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
  using TimePoint = std::chrono::steady_clock::time_point;
  // What the file shows of one tensor: its pid and the open duration events.
  struct Track {
    int pid = 0;
    int64_t last_ts = 0;             // events on a track never go back in time
    std::vector<std::string> stack;  // open B events, outermost first
    size_t op_depth = kNoOp;         // stack index of the open operation
    bool op_pending = false;         // OpStart seen, its B not yet written
    std::string op_name;
    int64_t op_ts = 0;
  };
  static constexpr size_t kNoOp = static_cast<size_t>(-1);

  void StopLocked();  // control_mu_ held
  // All below: called with mu_ held and writer_ set.
  int64_t Micros(TimePoint t) const;
  Track& TrackOf(const std::string& tensor);
  void Emit(Track& t, char phase, const std::string& name, int64_t ts, std::string args = "");
  void BeginPendingOp(Track& t, int64_t ts);

  std::atomic<bool> active_{false};
  std::mutex control_mu_;  // serialises Start/Stop
  std::mutex mu_;          // guards everything below
  std::unique_ptr<TimelineWriter> writer_;
  TimePoint start_;
  bool mark_cycles_ = false;
  int next_pid_ = 1;  // pid 0 holds the cycle markers
  std::unordered_map<std::string, Track> tracks_;
};

}  // namespace hvd
