// The flight recorder: the last N operations this rank submitted, in a ring
// allocated once, each with the time it reached every stage (submitted,
// negotiated, executing, done) and how it ended. Dumped as JSON to a file
// per rank when a deadline passes or a peer is lost, on SIGUSR1, or on
// request (hvd_dump_flight_record); tools/hvd_flight compares the ranks'
// dumps and names the first operation on which they diverged.
//
// Recording costs a slot write per submission (under the submit lock the
// runtime already holds) and a few relaxed stores per stage: no locks, no
// allocation. A dump reads the ring without stopping the job, so it is a
// best-effort snapshot: a slot rewritten while it is read is skipped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  enum Stage { kSubmitted = 0, kNegotiated = 1, kExecuting = 2, kDone = 3, kStages = 4 };
  static constexpr size_t kNameBytes = 96;  // longer names are cut
  static constexpr int kMaxDims = 6;        // more dims: the rest are not recorded

  FlightRecorder() = default;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // The stages' clock: the kernel's tick-granular monotonic clock (1-4 ms
  // resolution, a few ns to read), which is enough to see where a job hung
  // and cheap enough to read per response on the loop's hot path.
  static Clock::time_point Now();

  // Empties the ring and sizes it: `capacity` rounded up to a power of two
  // (0: recording off). Not concurrent with the calls below.
  void Reset(size_t capacity);
  bool on() const { return capacity_ > 0; }

  // One submission (callers serialise these); returns the token the stages
  // below take, 0 when off. `set_seq` counts the set's submissions on this
  // rank: ranks that agree on the order give an operation the same number.
  uint64_t Submit(const std::string& name, OpType type, int32_t set, int64_t set_seq, DataType dt,
                  const std::vector<int64_t>& shape, int64_t bytes, Clock::time_point at);
  // Any thread; a token whose slot was reused since is ignored.
  void Mark(uint64_t token, Stage stage, Clock::time_point at);
  void Done(uint64_t token, Code code, Clock::time_point at);

  struct Header {
    int rank = 0, size = 1;
    std::string host, reason;
  };
  // Writes the ring, oldest first, to `path` (through a temporary file).
  Status Dump(const std::string& path, const Header& header) const;

 private:
  struct Slot {
    // 0 while empty or being written; mutable: the dump checks it with an RMW.
    mutable std::atomic<uint64_t> token{0};
    std::atomic<int64_t> at[kStages];
    std::atomic<int32_t> code{0};
    int32_t set = 0;
    int64_t set_seq = 0;
    OpType type = OpType::kAllreduce;
    DataType dtype = DataType::kFloat32;
    int32_t ndim = 0;
    int64_t shape[kMaxDims] = {};
    int64_t bytes = 0;
    char name[kNameBytes] = {};
  };

  std::unique_ptr<Slot[]> ring_;
  size_t capacity_ = 0;
  std::atomic<uint64_t> next_{0};
  mutable std::mutex dump_mu_;
};

}  // namespace hvd
