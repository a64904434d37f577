// What each allreduced byte costs in host memory: the bytes hvd itself
// reads and writes for allreduces (its packing, reductions, scaling and
// shared-memory copies; not a transport's own copies inside Open MPI or
// Gloo), beside the bytes allreduced, how many collectives carried them
// (tensor fusion's effect) and how the shared segment was written.
// Process-wide, since the first init; hvd_get_stats reports them and
// hvd_bench prints them per iteration.
#pragma once

#include <atomic>
#include <cstdint>

namespace hvd {

struct HostTraffic {
  std::atomic<uint64_t> moved{0};
  std::atomic<uint64_t> allreduced{0};
  std::atomic<uint64_t> allreduces{0};  // collectives: a fused batch counts once
  // Shared-memory collectives large enough that how the members write the
  // segment is chosen (AgreedStores: member 0 for all), and those streamed.
  std::atomic<uint64_t> shm_chosen{0};
  std::atomic<uint64_t> shm_streamed{0};
  // Allreduces between buffers from hvd_alloc_shared, skipping the slots.
  std::atomic<uint64_t> shm_mapped{0};
  // Host-local allreduces that took the backend's own allreduce instead of
  // the slots, as the faster path at the time (shm_backend.cc).
  std::atomic<uint64_t> shm_backend{0};
  // ... or the direct path, reading the peers' memory (shm_direct.cc).
  std::atomic<uint64_t> shm_peer_reads{0};
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

// Once per shared-memory collective whose stores were chosen.
inline void CountStoreChoice(bool stream) {
  Traffic().shm_chosen.fetch_add(1, std::memory_order_relaxed);
  if (stream) Traffic().shm_streamed.fetch_add(1, std::memory_order_relaxed);
}

// Once per allreduce that went between shared buffers (shm_mapped.cc).
inline void CountMappedCall() {
  Traffic().shm_mapped.fetch_add(1, std::memory_order_relaxed);
}

// Once per allreduce that took the backend's path (shm_backend.cc).
inline void CountBackendCall() {
  Traffic().shm_backend.fetch_add(1, std::memory_order_relaxed);
}

// Once per allreduce that took the direct path (shm_direct.cc).
inline void CountPeerReadCall() {
  Traffic().shm_peer_reads.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hvd
