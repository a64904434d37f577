// Dispatch over DataType, written once. Code that needs an element's C++
// type (reductions, scaling, kernel launches) calls VisitDataType with a
// generic lambda; code that maps a DataType to a value (MPI and NCCL type
// names, DLPack codes) looks it up with PerDataType in a table in enum
// order. A new DataType is added here, in the element tuples and in those
// tables (whose size is checked), nowhere else.
//
//   VisitDataType(dt, [&](auto tag) {
//     using T = HostElementT<decltype(tag)::value>;
//     ...
//   }, [] { /* dt is not a DataType value */ });
//
// Header-only and free of host-only code, so CUDA sources use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>

#include "core/common/types.h"

namespace hvd {

template <DataType D>
struct DataTypeTag {
  static constexpr DataType value = D;
};

// The host type of one element, in enum order. 16-bit floats are their bits
// (uint16_t): convert with half.h to compute on them. bool is its byte: the
// element-wise max and min of bytes are OR and AND of their truth values.
using HostElements = std::tuple<uint8_t, int8_t, int32_t, int64_t, uint16_t, uint16_t, float,
                                double, int16_t, uint8_t>;
static_assert(std::tuple_size<HostElements>::value == kNumDataTypes, "one type per DataType");
template <DataType D>
using HostElementT = std::tuple_element_t<static_cast<size_t>(D), HostElements>;

// f(DataTypeTag<dt>{}); unknown() when dt is outside the enum (a corrupt
// value: the wire decoders reject those). Both must return the same type.
template <typename F, typename U>
decltype(auto) VisitDataType(DataType dt, F&& f, U&& unknown) {
  switch (dt) {
    case DataType::kUInt8:
      return f(DataTypeTag<DataType::kUInt8>{});
    case DataType::kInt8:
      return f(DataTypeTag<DataType::kInt8>{});
    case DataType::kInt32:
      return f(DataTypeTag<DataType::kInt32>{});
    case DataType::kInt64:
      return f(DataTypeTag<DataType::kInt64>{});
    case DataType::kFloat16:
      return f(DataTypeTag<DataType::kFloat16>{});
    case DataType::kBFloat16:
      return f(DataTypeTag<DataType::kBFloat16>{});
    case DataType::kFloat32:
      return f(DataTypeTag<DataType::kFloat32>{});
    case DataType::kFloat64:
      return f(DataTypeTag<DataType::kFloat64>{});
    case DataType::kInt16:
      return f(DataTypeTag<DataType::kInt16>{});
    case DataType::kBool:
      return f(DataTypeTag<DataType::kBool>{});
  }
  return unknown();
}

// values[dt] from a table with one entry per DataType in enum order;
// `otherwise` for a value outside the enum.
template <typename T, size_t N>
T PerDataType(const T (&values)[N], DataType dt, T otherwise) {
  static_assert(N == kNumDataTypes, "one entry per DataType, in enum order");
  const auto i = static_cast<size_t>(dt);
  return i < N ? values[i] : otherwise;
}

}  // namespace hvd
