// The hash of tensor names (short ASCII strings). Every submitted tensor's
// name is hashed two or three times (the queue's index, the response
// cache), and std::hash's out-of-line Murmur call was a visible part of the
// per-tensor cost; this one is inline and takes 8 bytes per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hvd {

struct NameHash {
  size_t operator()(std::string_view s) const noexcept {
    const char* p = s.data();
    size_t n = s.size();
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdULL;
      h ^= h >> 29;
    }
    // The last 0-7 bytes in at most three fixed-size loads.
    uint64_t w = 0;
    unsigned shift = 0;
    if (n >= 4) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      w = v;
      p += 4;
      n -= 4;
      shift = 32;
    }
    if (n >= 2) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      w |= uint64_t{v} << shift;
      p += 2;
      n -= 2;
      shift += 16;
    }
    if (n) w |= uint64_t{static_cast<uint8_t>(*p)} << shift;
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    // Final avalanche: open addressing uses the low bits.
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<size_t>(h);
  }
};

}  // namespace hvd
