// C functions of elastic mode (see "elastic training" in hvd.h): thin
// wrappers over core/elastic.h.
#include "capi/capi_report.h"
#include "core/rendezvous/elastic.h"
#include "hvd/hvd.h"

int hvd_elastic_enabled(void) {
  return hvd::elastic::Enabled() ? 1 : 0;
}

int64_t hvd_elastic_round(void) {
  return hvd::elastic::CurrentRound();
}

hvd_status hvd_elastic_hosts_updated(int* updated) {
  if (updated == nullptr) {
    return hvd::capi::ReportStatus(
        hvd::Status::Invalid("hvd_elastic_hosts_updated: updated is NULL"));
  }
  bool u = false;
  hvd::Status s = hvd::elastic::HostsUpdated(&u);
  *updated = u ? 1 : 0;
  if (s.code() == hvd::Code::kNotInitialized) {
    s = hvd::Status(
        hvd::Code::kNotInitialized,
        "hvd_elastic_hosts_updated: this worker has not joined a round (call hvd_init)");
  }
  return hvd::capi::ReportStatus(s);
}
