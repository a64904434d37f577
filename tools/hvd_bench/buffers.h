// The memory one workload runs on: one contiguous input and one contiguous
// output buffer (or the input alone, in place), each tensor a view into
// them `gap` floats apart, so every implementation - hvd and the raw
// patterns - reduces the very same bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "tools/hvd_bench/workloads.h"

namespace hvdbench {

// Where a workload's buffers come from.
enum class Memory {
  kHeap,       // std::vector: 4 KiB pages where transparent huge pages are "madvise"
  kShared,     // hvd_alloc_shared (--shared-buffers)
  kHugePages,  // mmap + MADV_HUGEPAGE (--huge-pages), as numpy does for large arrays
};

// Gives back hvd_alloc_shared memory, or munmaps `bytes` of huge pages.
struct ReleaseFloats {
  size_t bytes = 0;  // 0: hvd_alloc_shared's
  void operator()(float* p) const;
};

class Floats {
 public:
  Floats() = default;
  Floats(size_t n, float value, Memory memory);
  float* data() { return mapped_ ? mapped_.get() : heap_.data(); }
  const float* data() const { return mapped_ ? mapped_.get() : heap_.data(); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void Fill(float value) { std::fill(data(), data() + n_, value); }

 private:
  std::vector<float> heap_;
  std::unique_ptr<float, ReleaseFloats> mapped_;
  size_t n_ = 0;
};

class Buffers {
 public:
  // Inputs are rank+1, so the sum over n ranks is exactly n(n+1)/2.
  // `memory`: where both buffers come from (hvd and the raw patterns alike).
  Buffers(const Workload& wl, int gap, bool in_place, int rank, Memory memory);
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  size_t tensors() const { return counts_.size(); }
  int64_t offset(size_t i) const { return offset_[i]; }
  int64_t count(size_t i) const { return counts_[i]; }
  const float* in() const { return in_.data(); }
  float* out() { return dst_; }
  int64_t span() const { return static_cast<int64_t>(in_.size()); }  // elements, gaps included
  DLTensor* tensor_in(size_t i) { return &tin_[i]; }
  DLTensor* tensor_out(size_t i) { return &tout_[i]; }
  const char* name(size_t i) const { return names_[i].c_str(); }

  bool has_output() const { return !out_.empty(); }  // not --in-place
  // Resets the output (or, in place, the input) before an implementation
  // runs: zeros, or the input's values for a raw pattern in place on it.
  void Reset();
  void set_output_starts_as_input(bool v) { output_starts_as_input_ = v; }
  // Exact check after one iteration on `size` ranks: every element of every
  // tensor is sum_{r<size}(r+1). Prints the first wrong element.
  bool Verify(int size) const;

 private:
  int rank_;
  Floats in_, out_;
  float* dst_ = nullptr;  // out_.data(), or in_.data() in place
  bool output_starts_as_input_ = false;
  std::vector<int64_t> offset_, shape_, counts_;
  std::vector<DLTensor> tin_, tout_;
  std::vector<std::string> names_;
};

}  // namespace hvdbench
