#include <mutex>

#include "core/backends/mpi/mpi_comm.h"
#include "core/common/dtype_dispatch.h"
#include "core/common/reduce.h"

namespace hvd {
namespace {

template <DataType D, ReduceOp O>
void Reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  ReduceInto(inout, in, *len, D, O);
}

// [0]: float16, [1]: bfloat16; by ReduceOp sum, (average), min, max, product.
MPI_Op g_half_ops[2][5];

void CreateHalfOps() {
  using MpiFn = void (*)(void*, void*, int*, MPI_Datatype*);
  const MpiFn fns[2][5] = {
      {Reduce16<DataType::kFloat16, ReduceOp::kSum>, Reduce16<DataType::kFloat16, ReduceOp::kSum>,
       Reduce16<DataType::kFloat16, ReduceOp::kMin>, Reduce16<DataType::kFloat16, ReduceOp::kMax>,
       Reduce16<DataType::kFloat16, ReduceOp::kProduct>},
      {Reduce16<DataType::kBFloat16, ReduceOp::kSum>, Reduce16<DataType::kBFloat16, ReduceOp::kSum>,
       Reduce16<DataType::kBFloat16, ReduceOp::kMin>, Reduce16<DataType::kBFloat16, ReduceOp::kMax>,
       Reduce16<DataType::kBFloat16, ReduceOp::kProduct>}};
  for (int t = 0; t < 2; ++t) {
    for (int o = 0; o < 5; ++o) MPI_Op_create(fns[t][o], /*commute=*/1, &g_half_ops[t][o]);
  }
}

}  // namespace

MPI_Datatype ToMpiType(DataType dt) {
  // 16-bit floats travel as opaque uint16 bits that only hvd's own
  // reduction ops interpret; bool as its byte (the C API reduces it with
  // max and min, which are OR and AND on bytes).
  static const MPI_Datatype kTypes[] = {MPI_UINT8_T,  MPI_INT8_T,   MPI_INT32_T, MPI_INT64_T,
                                        MPI_UINT16_T, MPI_UINT16_T, MPI_FLOAT,   MPI_DOUBLE,
                                        MPI_INT16_T,  MPI_UINT8_T};
  return PerDataType(kTypes, dt, MPI_BYTE);
}

MPI_Op ToMpiOp(DataType dt, ReduceOp op) {
  // Adasum is not element-wise (core/ops/adasum.cc); never reduced by MPI.
  if (op == ReduceOp::kAdasum) return MPI_OP_NULL;
  if (dt == DataType::kFloat16 || dt == DataType::kBFloat16) {
    // Created once per process: MPI cannot be re-initialised, so these
    // live until MPI_Finalize frees them.
    static std::once_flag once;
    std::call_once(once, CreateHalfOps);
    return g_half_ops[dt == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return MPI_SUM;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kProduct:
      return MPI_PROD;
    case ReduceOp::kAdasum:
      break;
  }
  return MPI_SUM;
}

}  // namespace hvd
