#include "core/common/host_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

namespace hvd {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

struct Mapping {
  uint8_t* data;
  size_t capacity;
};

struct Cache {
  std::mutex mu;
  std::deque<Mapping> free;  // most recently released last
  size_t bytes = 0;
};

// Never destroyed: handles released during exit (the handle table is a
// static too) still return their buffers after a local static would be gone.
Cache& cache() {
  alignas(Cache) static unsigned char storage[sizeof(Cache)];
  static Cache* c = ::new (static_cast<void*>(storage)) Cache();
  return *c;
}

// The smallest cached mapping that holds `bytes` without wasting more than
// as much again; {nullptr, 0} if none.
Mapping TakeCached(size_t bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto best = c.free.end();
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    if (it->capacity >= bytes && it->capacity <= 2 * bytes &&
        (best == c.free.end() || it->capacity < best->capacity)) {
      best = it;
    }
  }
  if (best == c.free.end()) return {nullptr, 0};
  const Mapping m = *best;
  c.free.erase(best);
  c.bytes -= m.capacity;
  return m;
}

Mapping MapNew(size_t bytes) {
  const size_t capacity = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {nullptr, 0};
  ::madvise(p, capacity, MADV_HUGEPAGE);  // advice only: where THP is off, 4 KiB pages
  return {static_cast<uint8_t*>(p), capacity};
}

// Keeps `m` for a later result, dropping the oldest beyond the bounds.
void GiveBack(Mapping m) {
  std::deque<Mapping> drop;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    c.free.push_back(m);
    c.bytes += m.capacity;
    while (c.bytes > HostBuffer::kCachedBytes || c.free.size() > HostBuffer::kCachedBuffers) {
      c.bytes -= c.free.front().capacity;
      drop.push_back(c.free.front());
      c.free.pop_front();
    }
  }
  for (const Mapping& d : drop) ::munmap(d.data, d.capacity);  // outside the lock
}

}  // namespace

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  if (bytes >= kMappedBytes) {
    Mapping m = TakeCached(bytes);
    if (!m.data) m = MapNew(bytes);
    data_ = m.data;
    capacity_ = m.capacity;
  }
  if (!data_) data_ = static_cast<uint8_t*>(std::malloc(bytes));  // small, or mmap failed
  if (!data_) throw std::bad_alloc();
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      capacity_(std::exchange(o.capacity_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
  }
  return *this;
}

void HostBuffer::Release() {
  if (!data_) return;
  if (capacity_ > 0) {
    GiveBack({data_, capacity_});
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = capacity_ = 0;
}

size_t HostBuffer::CachedBytesNow() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

}  // namespace hvd
