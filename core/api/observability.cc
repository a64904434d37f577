// Counters, the timeline and the flight recorder, on request.
#include "core/api/api.h"
#include "core/common/traffic.h"
#include "core/runtime/runtime.h"
#include "core/tensor/wait_totals.h"

namespace hvd {
namespace api {

Stats GetStats() {
  Stats s;
  s.allreduced_bytes = Traffic().allreduced.load(std::memory_order_relaxed);
  s.host_bytes_moved = Traffic().moved.load(std::memory_order_relaxed);
  s.host_allreduces = Traffic().allreduces.load(std::memory_order_relaxed);
  s.shm_chosen_calls = Traffic().shm_chosen.load(std::memory_order_relaxed);
  s.shm_streamed_calls = Traffic().shm_streamed.load(std::memory_order_relaxed);
  s.shm_mapped_calls = Traffic().shm_mapped.load(std::memory_order_relaxed);
  s.shm_backend_calls = Traffic().shm_backend.load(std::memory_order_relaxed);
  s.shm_peer_read_calls = Traffic().shm_peer_reads.load(std::memory_order_relaxed);
  s.waits = Waits().waits.load(std::memory_order_relaxed);
  s.wait_ns = Waits().ns.load(std::memory_order_relaxed);
  s.wait_negotiating_ns = Waits().negotiating_ns.load(std::memory_order_relaxed);
  return s;
}

Status StartTimeline(const std::string& path, bool mark_cycles) {
  return Runtime::Get().StartTimeline(path, mark_cycles);
}

Status StopTimeline() {
  return Runtime::Get().StopTimeline();
}

Status DumpFlightRecord(const std::string& path, const std::string& reason) {
  return Runtime::Get().DumpFlightRecord(path, reason);
}

}  // namespace api
}  // namespace hvd
