// Dumping the flight recorder on request.
#include "capi/capi_internal.h"

extern "C" {

hvd_status hvd_dump_flight_record(const char* path) {
  return hvd::capi::Guard("hvd_dump_flight_record", [path] {
    hvd::Status s = hvd::api::DumpFlightRecord(path ? path : "", "hvd_dump_flight_record");
    return hvd::capi::ReportFrom("hvd_dump_flight_record", s);
  });
}

}  // extern "C"
