// C functions of elastic mode (see "elastic training" in hvd.h).
#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

hvd_status HostsUpdated(int* updated) {
  if (updated == nullptr) {
    return Report(Status::Invalid("hvd_elastic_hosts_updated: updated is NULL"));
  }
  bool u = false;
  Status s = api::ElasticHostsUpdated(&u);
  *updated = u ? 1 : 0;
  if (s.code() == Code::kNotInitialized) {
    s = Status(Code::kNotInitialized,
               "hvd_elastic_hosts_updated: this worker has not joined a round (call hvd_init)");
  }
  return Report(s);
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

int hvd_elastic_enabled(void) {
  return hvd::capi::Guarded("hvd_elastic_enabled", 0,
                            [] { return hvd::api::ElasticEnabled() ? 1 : 0; });
}

int64_t hvd_elastic_round(void) {
  return hvd::capi::Guarded("hvd_elastic_round", int64_t{-1},
                            [] { return hvd::api::ElasticRound(); });
}

hvd_status hvd_elastic_hosts_updated(int* updated) {
  return hvd::capi::Guard("hvd_elastic_hosts_updated",
                          [updated] { return hvd::capi::HostsUpdated(updated); });
}

}  // extern "C"
