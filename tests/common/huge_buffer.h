// Memory as numpy's large arrays get it (tests): an anonymous mapping
// advised MADV_HUGEPAGE and touched, so that the kernel backs its whole
// 2 MiB-aligned pages with huge pages where transparent huge pages are
// "madvise" or "always"; and what the kernel says it did, from
// /proc/self/smaps (AnonHugePages), to check hvd's own answer against.
#pragma once

#include <sys/mman.h>
#include <sys/utsname.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace hvd {
namespace testing {

// The bytes of the mapped areas that [p, p + bytes) touches that the
// kernel backs with huge pages (smaps' AnonHugePages).
inline int64_t AnonHugeBytes(const void* p, size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  const auto from = reinterpret_cast<uintptr_t>(p), to = from + bytes;
  bool in = false;
  int64_t huge = 0;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      in = lo < to && from < hi;
      continue;
    }
    int64_t kb = 0;
    if (in && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) huge += kb << 10;
  }
  return huge;
}

class HugeBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  // `bytes` that start `offset` bytes past a huge page's boundary; touched
  // unless `touch` is false; the first `small` bytes from that boundary
  // (whole huge pages) in small pages, as a numpy array's head can lie.
  explicit HugeBuffer(size_t bytes, size_t offset = 0, bool touch = true, size_t small = 0)
      : bytes_(bytes), mapped_(bytes + offset + kHugePage) {
    void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(p);
    auto at = reinterpret_cast<uintptr_t>(base_);
    at = (at + kHugePage - 1) / kHugePage * kHugePage;
    ::madvise(base_, mapped_, MADV_HUGEPAGE);
    if (small > 0) ::madvise(reinterpret_cast<void*>(at), small, MADV_NOHUGEPAGE);
    data_ = reinterpret_cast<uint8_t*>(at) + offset;
    if (touch) std::memset(data_, 1, bytes);
  }
  ~HugeBuffer() {
    if (base_) ::munmap(base_, mapped_);
  }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  uint8_t* data() const { return data_; }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

  // The bytes of this mapping's area the kernel backs with huge pages.
  int64_t huge_bytes() const { return AnonHugeBytes(data_, bytes_); }

 private:
  size_t bytes_, mapped_;
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
};

// Whether the running kernel has PAGEMAP_SCAN (Linux 6.7).
inline bool KernelScansPageMaps() {
  utsname u{};
  int major = 0, minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
         (major > 6 || (major == 6 && minor >= 7));
}

}  // namespace testing
}  // namespace hvd
