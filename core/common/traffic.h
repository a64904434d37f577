// What each allreduced byte costs in host memory: the bytes hvd itself
// reads and writes for allreduces (its packing, reductions, scaling and
// shared-memory copies; not a transport's own copies inside Open MPI or
// Gloo), beside the bytes allreduced, and how many collectives carried them
// (tensor fusion's effect). Process-wide, since the first init;
// hvd_get_stats reports them and hvd_bench prints them per iteration.
#pragma once

#include <atomic>
#include <cstdint>

namespace hvd {

struct HostTraffic {
  std::atomic<uint64_t> moved{0};
  std::atomic<uint64_t> allreduced{0};
  std::atomic<uint64_t> allreduces{0};  // collectives: a fused batch counts once
};

HostTraffic& Traffic();

inline void CountMoved(int64_t bytes) {
  Traffic().moved.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
}

// Once per host allreduce collective, with its bytes.
inline void CountAllreduced(int64_t bytes) {
  Traffic().allreduced.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
  Traffic().allreduces.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hvd
