// Process-wide counters (api::GetStats).
#include <algorithm>
#include <cstring>

#include "capi/capi_internal.h"

extern "C" {

hvd_status hvd_get_stats(hvd_stats* stats) {
  return hvd::capi::Guard("hvd_get_stats", [stats] {
    if (!stats || stats->struct_size < sizeof(size_t)) {
      return hvd::capi::Fail(hvd::Code::kInvalidArgument,
                             "hvd_get_stats: stats is NULL or its struct_size is not set");
    }
    const hvd::api::Stats now = hvd::api::GetStats();
    hvd_stats s;
    s.struct_size = sizeof(hvd_stats);
    s.allreduced_bytes = now.allreduced_bytes;
    s.host_bytes_moved = now.host_bytes_moved;
    s.host_allreduces = now.host_allreduces;
    s.shm_chosen_calls = now.shm_chosen_calls;
    s.shm_streamed_calls = now.shm_streamed_calls;
    s.shm_mapped_calls = now.shm_mapped_calls;
    s.waits = now.waits;
    s.wait_ns = now.wait_ns;
    s.wait_negotiating_ns = now.wait_negotiating_ns;
    s.shm_backend_calls = now.shm_backend_calls;
    s.shm_peer_read_calls = now.shm_peer_read_calls;
    // An older caller's smaller struct gets the fields it knows of.
    const size_t n = std::min(stats->struct_size, sizeof(hvd_stats)) - sizeof(size_t);
    std::memcpy(reinterpret_cast<char*>(stats) + sizeof(size_t),
                reinterpret_cast<const char*>(&s) + sizeof(size_t), n);
    return HVD_OK;
  });
}

}  // extern "C"
