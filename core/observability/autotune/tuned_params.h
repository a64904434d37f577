// The settings autotune varies, which every rank of a set must apply at the
// same point of the decision stream (fusion and chunking must agree).
#pragma once

#include <cstdint>

namespace hvd {

struct TunedParams {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  int64_t allreduce_chunk_bytes = 0;
};

}  // namespace hvd
