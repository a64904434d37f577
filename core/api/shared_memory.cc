// Host buffers the other processes of this host can map (api.h).
#include "core/api/api.h"
#include "core/dataplane/decorators/shared_buffers.h"

namespace hvd {
namespace api {

Status AllocShared(int64_t bytes, void** out) {
  return SharedBuffers::Alloc(bytes, out);
}

Status FreeShared(void* p) {
  return SharedBuffers::Free(p);
}

}  // namespace api
}  // namespace hvd
