// The coordinator's stall inspector: looks at every tensor that some ranks
// submitted and others have not, a few times per stall period. Past
// HVD_STALL_CHECK_TIME_SECONDS it warns once, naming the missing ranks; past
// HVD_STALL_SHUTDOWN_TIME_SECONDS or the operation deadline
// (HVD_OP_TIMEOUT_SECONDS) the tensor fails with HVD_ERR_TIMEOUT on the
// ranks that submitted it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/common/types.h"

namespace hvd {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  StallInspector(const Config& config, int32_t set_id);

  // True when waiting tensors should be looked at now (then at most a few
  // times per stall period, never more than once a second).
  bool Due(Clock::time_point now);
  Clock::time_point next() const { return next_; }

  // One waiting tensor. Returns true with *error set when it must fail now
  // (`detail` then says what the missing ranks are doing); otherwise adds it
  // to this round's warning once it waited long enough.
  bool Inspect(const std::string& name, OpType type, Clock::time_point since,
               const std::vector<int>& missing, bool* warned, std::string* error,
               const std::function<std::string()>& detail);
  // Logs this round's warning (one line for every newly stalled tensor).
  void Flush();

 private:
  const Config& config_;
  int32_t set_id_;
  Clock::time_point now_;
  Clock::time_point next_;
  std::string report_;
};

}  // namespace hvd
