// Starting and stopping the timeline while the job runs.
#include "capi/capi_internal.h"

extern "C" {

hvd_status hvd_start_timeline(const char* path, int mark_cycles) {
  return hvd::capi::Guard("hvd_start_timeline", [path, mark_cycles] {
    if (!path)
      return hvd::capi::Fail(hvd::Code::kInvalidArgument, "hvd_start_timeline: path is NULL");
    hvd::Status s = hvd::api::StartTimeline(path, mark_cycles != 0);
    return hvd::capi::ReportFrom("hvd_start_timeline", s);
  });
}

hvd_status hvd_stop_timeline(void) {
  return hvd::capi::Guard("hvd_stop_timeline", [] {
    hvd::Status s = hvd::api::StopTimeline();
    return hvd::capi::ReportFrom("hvd_stop_timeline", s);
  });
}

}  // extern "C"
