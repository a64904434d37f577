// Process sets: adding and removing them, and this rank's place in one.
#include <string>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

hvd_status AddProcessSet(const int32_t* ranks, int n, int32_t* id) {
  const char* fn = "hvd_add_process_set";
  Status s = CheckInit(fn);
  if (!s.ok()) return Report(s);
  if (!ranks || n <= 0 || !id)
    return Fail(Code::kInvalidArgument, std::string(fn) + ": needs ranks, n > 0 and id");
  return ReportFrom(fn, api::AddProcessSet({ranks, static_cast<size_t>(n)}, id));
}

hvd_status RemoveProcessSet(int32_t id) {
  const char* fn = "hvd_remove_process_set";
  Status s = CheckInit(fn);
  if (!s.ok()) return Report(s);
  return ReportFrom(fn, api::RemoveProcessSet(id));
}

// This rank's place in set `id`, as `pick(rank, size)`; -1 (and a last
// error) for unknown sets or before init.
int SetQuery(const char* fn, int32_t id, int (*pick)(int rank, int size)) {
  return Guarded(fn, -1, [id, pick] {
    int rank = -1, size = -1;
    Status s = api::ProcessSetInfo(id, &rank, &size);
    if (!s.ok()) {
      Report(s);
      return -1;
    }
    return pick(rank, size);
  });
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_add_process_set(const int32_t* ranks, int n, int32_t* id) {
  return hvd::capi::Guard("hvd_add_process_set",
                          [&] { return hvd::capi::AddProcessSet(ranks, n, id); });
}

hvd_status hvd_remove_process_set(int32_t id) {
  return hvd::capi::Guard("hvd_remove_process_set",
                          [id] { return hvd::capi::RemoveProcessSet(id); });
}

int hvd_process_set_rank(int32_t id) {
  return hvd::capi::SetQuery("hvd_process_set_rank", id, [](int rank, int) { return rank; });
}

int hvd_process_set_size(int32_t id) {
  return hvd::capi::SetQuery("hvd_process_set_size", id, [](int, int size) { return size; });
}

int hvd_process_set_included(int32_t id) {
  // Unknown sets are "not included" (0), not an error value.
  const int rank =
      hvd::capi::SetQuery("hvd_process_set_included", id, [](int r, int) { return r; });
  return rank >= 0 ? 1 : 0;
}

}  // extern "C"
