// Host memory for the results hvd allocates itself (allgather, alltoall and
// reducescatter without a caller allocator), freed with the handle.
//
// Why not a std::vector: a result is written once and read once, so what it
// costs is its pages. Fresh pages fault on first touch, one per 4 KiB (on
// the project's VM about 3 ms per MiB: a 48 MB alltoall spent 150 ms making
// its result and 9 ms exchanging it), and a vector zero-fills them first.
// Large buffers therefore come from mmap with transparent huge pages asked
// for (one fault per 2 MiB), and on release go to a small process-wide
// cache: a training loop asks for the same sizes every step, and the last
// step's pages are already mapped. Small buffers use malloc, whose heap
// already recycles them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvd {

class ResultBuffer {
 public:
  // Buffers from this size on are mapped and cached.
  static constexpr size_t kMappedBytes = size_t{1} << 20;
  // The cache keeps at most this many bytes, in at most kCachedBuffers
  // buffers (the most recently released).
  static constexpr size_t kCachedBytes = size_t{512} << 20;
  static constexpr size_t kCachedBuffers = 8;

  ResultBuffer() = default;
  // Uninitialised; throws std::bad_alloc when no memory is left.
  explicit ResultBuffer(size_t bytes);
  ~ResultBuffer() { Release(); }
  ResultBuffer(ResultBuffer&& o) noexcept;
  ResultBuffer& operator=(ResultBuffer&& o) noexcept;
  ResultBuffer(const ResultBuffer&) = delete;
  ResultBuffer& operator=(const ResultBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Bytes mapped for this buffer (0 for malloc's), at least size().
  size_t capacity() const { return capacity_; }

  // What the cache holds now (for tests and diagnostics).
  static size_t CachedBytesNow();

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace hvd
