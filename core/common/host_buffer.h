// Host memory that is written once and read once per call and whose pages
// are what it costs: the results hvd allocates itself (allgather, alltoall
// and reducescatter without a caller allocator, freed with the handle) and
// the backends' per-call scratch (Gloo's reduce-scatter).
//
// Why not a std::vector: fresh pages fault on first touch, one per 4 KiB
// (on a VM a page fault can cost more than moving the page's bytes, so a
// large result took far longer to make than to exchange), and a vector
// zero-fills them first. Large buffers therefore come from mmap with transparent huge pages
// asked for (one fault per 2 MiB), and on release go to a small
// process-wide cache: a training loop asks for the same sizes every step,
// and the last step's pages are already mapped. Small buffers use malloc,
// whose heap already recycles them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvd {

class HostBuffer {
 public:
  // Buffers from this size on are mapped and cached.
  static constexpr size_t kMappedBytes = size_t{1} << 20;
  // The cache keeps at most this many bytes, in at most kCachedBuffers
  // buffers (the most recently released).
  static constexpr size_t kCachedBytes = size_t{512} << 20;
  static constexpr size_t kCachedBuffers = 8;

  HostBuffer() = default;
  // Uninitialised; throws std::bad_alloc when no memory is left.
  explicit HostBuffer(size_t bytes);
  ~HostBuffer() { Release(); }
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

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
