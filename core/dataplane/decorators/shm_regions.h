// Walking a table of DirectRegions (tensors where they lie, back to back in
// the elements of one allreduce): what ShmComm's allreduces of regions
// share (shm_direct.cc reads the peers' tables, shm_shared.cc and
// shm_backend.cc their own).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/reduce.h"
#include "core/common/stream_copy.h"

namespace hvd {
namespace shm_regions {

// Where each region starts, in elements: starts[i], with starts[n] the total.
inline std::vector<int64_t> Starts(const std::vector<DirectRegion>& t) {
  std::vector<int64_t> s(t.size() + 1, 0);
  for (size_t i = 0; i < t.size(); ++i) s[i + 1] = s[i] + t[i].n;
  return s;
}

// Calls fn(region, first element within it, first element within the range,
// n) for the parts of the elements [a, a + m) that the table's regions hold.
template <typename Fn>
void Walk(const std::vector<DirectRegion>& t, const std::vector<int64_t>& starts, int64_t a,
          int64_t m, const Fn& fn) {
  auto i =
      static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), a) - starts.begin() - 1);
  for (; i < t.size() && starts[i] < a + m; ++i) {
    const int64_t from = std::max(a, starts[i]), to = std::min(a + m, starts[i + 1]);
    if (to > from) fn(t[i], from - starts[i], from - a, to - from);
  }
}

inline uint8_t* At(uint64_t addr, int64_t elem, int64_t es) {
  return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr)) + elem * es;
}

// The inputs of elements [a, a + m) into `to`, back to back; zeros where a
// region has no input (a joined rank's part).
inline void In(const std::vector<DirectRegion>& t, const std::vector<int64_t>& starts, int64_t a,
               int64_t m, uint8_t* to, int64_t es, DataType dt) {
  Walk(t, starts, a, m, [&](const DirectRegion& g, int64_t at, int64_t into, int64_t n) {
    if (!g.in) return ZeroBuffer(to + into * es, n, dt);
    std::memcpy(to + into * es, At(g.in, at, es), static_cast<size_t>(n * es));
  });
}

// n results from `from` into region g's output at element `at`: streamed
// where `stream` (a large call) and the output is not the input, whose lines
// a plain store would first read from memory.
inline void Out(bool stream, const DirectRegion& g, int64_t at, const uint8_t* from, int64_t n,
                int64_t es) {
  const auto bytes = static_cast<size_t>(n * es);
  if (stream && g.out != g.in) return StreamCopy(At(g.out, at, es), from, bytes);
  std::memcpy(At(g.out, at, es), from, bytes);
}

}  // namespace shm_regions
}  // namespace hvd
