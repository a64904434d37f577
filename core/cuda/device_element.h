// The CUDA type of one element of each DataType, for the kernels: the host
// type (dtype_dispatch.h) except for the 16-bit floats, which are CUDA's
// __half and __nv_bfloat16, and int64, which is long long (what CUDA's
// integer intrinsics take).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <tuple>

#include "core/common/dtype_dispatch.h"

namespace hvd {

// In DataType order.
using DeviceElements = std::tuple<uint8_t, int8_t, int32_t, long long, __half, __nv_bfloat16, float,
                                  double, int16_t, uint8_t>;
static_assert(std::tuple_size<DeviceElements>::value == kNumDataTypes, "one type per DataType");
template <DataType D>
using DeviceElementT = std::tuple_element_t<static_cast<size_t>(D), DeviceElements>;

}  // namespace hvd
