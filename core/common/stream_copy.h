// A copy whose stores bypass the caches (non-temporal), for results written
// to memory nobody has read lately: a plain store to a cache line that is
// not cached first reads the line from memory (read for ownership), so
// writing a large out-of-place result costs a read and a write per byte.
#pragma once

#include <cstddef>

namespace hvd {

// memcpy(dst, src, n), dst's lines written without being read or cached.
// Ordered before later stores (it ends with a store fence), so a flag set
// after it publishes the data. Plain memcpy where the CPU has no such store.
void StreamCopy(void* dst, const void* src, size_t n);

}  // namespace hvd
