// Broadcast: root's tensor replaces everyone's, in place.
#include "core/ops/op.h"

namespace hvd {

Status ExecuteBroadcast(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    TensorEntry* e = entries[i];
    if (ctx.comm->rank() == r.root && e->input != e->output) {
      HVD_RETURN_IF_ERROR(ctx.ops().CopyRegions({{e->output, e->input, e->bytes}}));
    }
    ScopedActivity a(ctx.timeline, r, BackendActivity(*ctx.comm, r.type));
    HVD_RETURN_IF_ERROR(ctx.comm->Broadcast(e->output, e->bytes, r.root));
  }
  return Status::OK();
}

}  // namespace hvd
