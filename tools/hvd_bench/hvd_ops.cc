#include "tools/hvd_bench/hvd_ops.h"

#include "tools/hvd_bench/fail.h"

namespace hvdbench {
namespace {

constexpr int64_t kWaitMs = 300000;

DLTensor CpuVector(void* data, DLDataType dtype, int64_t* shape) {
  DLTensor t{};
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  t.data = data;
  return t;
}

void AllreduceNow(DLTensor* in, DLTensor* out, hvd_reduce_op op, const char* name) {
  hvd_handle h;
  Check(hvd_allreduce_async(name, in, out, op, nullptr, &h), "hvd_allreduce_async");
  Check(hvd_wait(h, kWaitMs), "hvd_wait");
  Check(hvd_release(h), "hvd_release");
}

}  // namespace

void HvdIteration(Buffers& b, std::vector<hvd_handle>& handles, bool in_place) {
  const size_t n = b.tensors();
  for (size_t i = 0; i < n; ++i) {
    DLTensor* in = in_place ? b.tensor_out(i) : b.tensor_in(i);
    Check(hvd_allreduce_async(b.name(i), in, b.tensor_out(i), HVD_OP_SUM, nullptr, &handles[i]),
          "hvd_allreduce_async");
  }
  for (size_t i = 0; i < n; ++i) {
    Check(hvd_wait(handles[i], kWaitMs), "hvd_wait");
    Check(hvd_release(handles[i]), "hvd_release");
  }
}

void HvdBarrier() {
  Check(hvd_barrier(0), "hvd_barrier");
}

int64_t HvdAllreduceInt64(int64_t v, hvd_reduce_op op, const char* name) {
  int64_t in = v, out = 0, shape = 1;
  DLTensor ti = CpuVector(&in, DLDataType{kDLInt, 64, 1}, &shape);
  DLTensor to = CpuVector(&out, DLDataType{kDLInt, 64, 1}, &shape);
  AllreduceNow(&ti, &to, op, name);
  return out;
}

std::vector<double> HvdGather(double v, const char* name) {
  // A SUM of vectors that are zero except at each rank's own slot.
  const int size = hvd_size(), rank = hvd_rank();
  std::vector<double> in(static_cast<size_t>(size), 0.0), out(in.size(), 0.0);
  in[static_cast<size_t>(rank)] = v;
  int64_t shape = size;
  DLTensor ti = CpuVector(in.data(), DLDataType{kDLFloat, 64, 1}, &shape);
  DLTensor to = CpuVector(out.data(), DLDataType{kDLFloat, 64, 1}, &shape);
  AllreduceNow(&ti, &to, HVD_OP_SUM, name);
  return out;
}

}  // namespace hvdbench
