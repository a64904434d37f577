// A lock for the critical sections of a few dozen instructions that every
// submitted tensor passes through (the queue's index, the handle table, the
// handle-state pool). There an uncontended pthread mutex costs more than
// the work it guards: about 55 instructions per lock and unlock, against
// one atomic exchange and one store here.
//
// Test-and-test-and-set: a waiter spins on a plain load, then yields its
// core after a short while, because ranks often share cores with their own
// background threads and the holder may be descheduled. Meets
// BasicLockable (std::lock_guard). Not for sections that block or run
// long, and not with condition variables: use std::mutex there.
#pragma once

#include <unistd.h>

#include <atomic>
#include <thread>

namespace hvd {

// The spin-wait hint: lets the sibling hyperthread run and saves power.
inline void CpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Whether `ranks` processes of this host can each have a core of their
// own: only then does a waiter gain by spinning; otherwise a spin only
// delays the process it waits for.
inline bool RanksFitCores(int ranks) noexcept {
  return ranks <= ::sysconf(_SC_NPROCESSORS_ONLN);
}

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpins) {
          CpuRelax();
        } else {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpins = 64;

  std::atomic<bool> locked_{false};
};

}  // namespace hvd
