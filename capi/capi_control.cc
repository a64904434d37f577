// The blocking collectives without tensors: hvd_barrier and hvd_join.
#include "capi/capi_internal.h"

extern "C" {

hvd_status hvd_barrier(int32_t process_set) {
  return hvd::capi::Guard("hvd_barrier", [process_set] {
    hvd::Status s = hvd::capi::CheckInit("hvd_barrier");
    if (!s.ok()) return hvd::capi::Report(s);
    return hvd::capi::ReportFrom("hvd_barrier", hvd::api::Barrier(process_set));
  });
}

hvd_status hvd_join(int32_t process_set, int* last_rank) {
  return hvd::capi::Guard("hvd_join", [process_set, last_rank] {
    hvd::Status s = hvd::capi::CheckInit("hvd_join");
    if (!s.ok()) return hvd::capi::Report(s);
    return hvd::capi::ReportFrom("hvd_join", hvd::api::Join(process_set, last_rank));
  });
}

}  // extern "C"
