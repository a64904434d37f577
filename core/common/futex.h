// Futex waits and wakes on a 32-bit word: of a segment shared between
// processes (shared = true: the word's physical page is the key), or of
// this process alone (shared = false: the kernel looks it up by address).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdint>

namespace hvd {

// Sleeps while *word == expected, at most timeout_ns (< 0: no limit);
// returns on a wake, a change of the word, the timeout or a signal alike
// (callers re-check).
inline void FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns, bool shared = true) {
  timespec t{static_cast<time_t>(timeout_ns / 1000000000),
             static_cast<long>(timeout_ns % 1000000000)};
  ::syscall(SYS_futex, word, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected,
            timeout_ns < 0 ? nullptr : &t, nullptr, 0);
}

inline void FutexWakeAll(uint32_t* word, bool shared = true) {
  ::syscall(SYS_futex, word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr,
            0);
}

}  // namespace hvd
