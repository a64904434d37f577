#include "core/backends/gloo/gloo_reduce.h"

#include <cstring>
#include <string>

#include "core/common/reduce.h"

namespace hvd {
namespace gloo_backend {

Status GetReduceFunction(DataType dt, ReduceOp op, ReduceFn* out) {
  if (op != ReduceOp::kSum && op != ReduceOp::kMin && op != ReduceOp::kMax &&
      op != ReduceOp::kProduct) {
    return Status::Invalid("Gloo allreduce: unsupported reduce op " +
                           std::to_string(static_cast<int>(op)) +
                           " (average is a sum scaled by the caller)");
  }
  const size_t elem = DataTypeSize(dt);
  if (elem == 0) {
    return Status::Invalid("Gloo allreduce: unknown data type " +
                           std::to_string(static_cast<int>(dt)));
  }
  *out = [dt, op, elem](void* o, const void* a, const void* b, size_t n) {
    // Gloo calls with o == a (in-place ring) except for multi-input
    // reductions; ReduceInto is two-operand, so copy a first when needed.
    if (o != a) std::memmove(o, a, n * elem);
    ReduceInto(o, b, static_cast<int64_t>(n), dt, op);
  };
  return Status::OK();
}

}  // namespace gloo_backend
}  // namespace hvd
