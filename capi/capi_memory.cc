// Host buffers the other ranks of this host can map (api::AllocShared).
#include "capi/capi_internal.h"

extern "C" {

hvd_status hvd_alloc_shared(int64_t bytes, void** ptr) {
  return hvd::capi::Guard("hvd_alloc_shared", [bytes, ptr] {
    return hvd::capi::Report(hvd::api::AllocShared(bytes, ptr));
  });
}

hvd_status hvd_free_shared(void* ptr) {
  return hvd::capi::Guard("hvd_free_shared",
                          [ptr] { return hvd::capi::Report(hvd::api::FreeShared(ptr)); });
}

}  // extern "C"
