#include "tools/hvd_bench/buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hvdbench {

void ReleaseFloats::operator()(float* p) const {
  if (bytes == 0) {
    hvd_free_shared(p);
  } else {
    ::munmap(p, bytes);
  }
}

Floats::Floats(size_t n, float value, Memory memory) : n_(n) {
  if (memory == Memory::kHeap) {
    heap_.assign(n, value);
    return;
  }
  const size_t bytes = std::max<size_t>(n, 1) * sizeof(float);
  void* p = nullptr;
  if (memory == Memory::kShared) {
    if (hvd_alloc_shared(static_cast<int64_t>(bytes), &p) != HVD_OK) {
      std::fprintf(stderr, "hvd_bench: hvd_alloc_shared: %s\n", hvd_last_error());
      std::exit(1);
    }
  } else {
    // Advice only: the kernel backs what it can with 2 MiB pages when
    // transparent huge pages are "madvise" or "always" (Fill faults them in).
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "hvd_bench: mmap of %zu bytes: %s\n", bytes, std::strerror(errno));
      std::exit(1);
    }
    ::madvise(p, bytes, MADV_HUGEPAGE);
  }
  const size_t unmap = memory == Memory::kShared ? 0 : bytes;
  mapped_ = std::unique_ptr<float, ReleaseFloats>(static_cast<float*>(p), ReleaseFloats{unmap});
  Fill(value);
}

Buffers::Buffers(const Workload& wl, int gap, bool in_place, int rank, Memory memory)
    : rank_(rank), counts_(wl.counts) {
  const size_t n = counts_.size();
  const int64_t total = wl.total() + static_cast<int64_t>(gap) * static_cast<int64_t>(n);
  in_ = Floats(static_cast<size_t>(total), static_cast<float>(rank + 1), memory);
  if (!in_place) out_ = Floats(static_cast<size_t>(total), 0.0f, memory);
  dst_ = in_place ? in_.data() : out_.data();
  offset_.resize(n);
  shape_.resize(n);
  tin_.resize(n);
  tout_.resize(n);
  names_.resize(n);
  int64_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    offset_[i] = off;
    shape_[i] = counts_[i];
    off += counts_[i] + gap;
  }
  for (size_t i = 0; i < n; ++i) {
    DLTensor t{};
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = &shape_[i];
    t.strides = nullptr;
    t.byte_offset = 0;
    t.data = in_.data() + offset_[i];
    tin_[i] = t;
    t.data = dst_ + offset_[i];
    tout_[i] = t;
    names_[i] = wl.name + "." + std::to_string(i);
  }
}

void Buffers::Reset() {
  if (out_.empty()) {
    in_.Fill(static_cast<float>(rank_ + 1));  // in place
  } else if (output_starts_as_input_) {
    out_.Fill(static_cast<float>(rank_ + 1));
  } else {
    out_.Fill(0.0f);
  }
}

bool Buffers::Verify(int size) const {
  const float expect = static_cast<float>(size) * static_cast<float>(size + 1) / 2.0f;
  for (size_t t = 0; t < counts_.size(); ++t) {
    for (int64_t i = offset_[t]; i < offset_[t] + counts_[t]; ++i) {
      if (dst_[i] != expect) {
        std::fprintf(stderr, "hvd_bench[rank %d]: element %lld (tensor %zu) is %g, expected %g\n",
                     rank_, static_cast<long long>(i), t, static_cast<double>(dst_[i]),
                     static_cast<double>(expect));
        return false;
      }
    }
  }
  return true;
}

}  // namespace hvdbench
