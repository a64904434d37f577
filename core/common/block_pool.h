// A process-wide free list of memory blocks of one size, and an allocator
// over it for std::allocate_shared. For objects one thread makes and another
// frees (a handle's state: the caller makes it, the background thread often
// drops the last reference): glibc's per-thread caches miss on that
// pattern and fall through to the locked arena, about 400 instructions per
// object; a list behind a spin lock costs a twentieth of that.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include "core/common/spin_lock.h"

namespace hvd {

template <size_t Size>
class BlockPool {
 public:
  static void* Get() {
    Lists& l = lists();
    {
      std::lock_guard<SpinLock> lock(l.mu);
      if (!l.free.empty()) {
        void* p = l.free.back();
        l.free.pop_back();
        return p;
      }
    }
    return ::operator new(Size);
  }
  static void Put(void* p) {
    Lists& l = lists();
    {
      std::lock_guard<SpinLock> lock(l.mu);
      // Bounded: a burst of a million handles does not stay allocated.
      if (l.free.size() < kMaxFree) {
        l.free.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr size_t kMaxFree = 16384;
  struct Lists {
    SpinLock mu;
    std::vector<void*> free;
  };
  // Never destroyed: objects in other statics (the runtime's queues, the
  // handle table) may return blocks during exit, after a function-local
  // static made later would be gone. Its free blocks go with the process.
  static Lists& lists() {
    alignas(Lists) static unsigned char storage[sizeof(Lists)];
    static Lists* l = ::new (static_cast<void*>(storage)) Lists();
    return *l;
  }
};

// Allocates single objects from BlockPool (arrays from the heap).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockPool<sizeof(T)>::Get());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    BlockPool<sizeof(T)>::Put(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const PoolAllocator<U>&) const {
    return false;
  }
};

}  // namespace hvd
