// C functions of elastic mode (see "elastic training" in hvd.h): thin
// wrappers over core/rendezvous/elastic.h.
#include "capi/capi_internal.h"
#include "core/common/config.h"
#include "core/rendezvous/elastic.h"

namespace hvd {
namespace capi {
namespace {

// The settings in effect: hvd_init's while initialised, else the
// environment's (these functions may be called before hvd_init). An invalid
// environment reads as "not elastic": hvd_init will report it.
Config CurrentConfig() {
  if (RT().initialized()) return RT().config();
  Config c;
  if (!Config::FromEnvironment(&c).ok()) c = Config();
  return c;
}

hvd_status HostsUpdated(int* updated) {
  if (updated == nullptr) {
    return Report(Status::Invalid("hvd_elastic_hosts_updated: updated is NULL"));
  }
  const Config c = CurrentConfig();
  bool u = false;
  Status s = elastic::HostsUpdated(c.elastic, c.launch.rendezvous, &u);
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
                            [] { return hvd::capi::CurrentConfig().elastic ? 1 : 0; });
}

int64_t hvd_elastic_round(void) {
  return hvd::capi::Guarded("hvd_elastic_round", int64_t{-1},
                            [] { return hvd::elastic::CurrentRound(); });
}

hvd_status hvd_elastic_hosts_updated(int* updated) {
  return hvd::capi::Guard("hvd_elastic_hosts_updated",
                          [updated] { return hvd::capi::HostsUpdated(updated); });
}

}  // extern "C"
