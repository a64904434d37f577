// Futex waits and wakes on a 32-bit word of a segment shared between
// processes (not FUTEX_PRIVATE: the word's physical page is the key).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdint>

namespace hvd {

// Sleeps while *word == expected, at most timeout_ns; returns on a wake, a
// change of the word, the timeout or a signal alike (callers re-check).
inline void FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns) {
  timespec t{static_cast<time_t>(timeout_ns / 1000000000),
             static_cast<long>(timeout_ns % 1000000000)};
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &t, nullptr, 0);
}

inline void FutexWakeAll(uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace hvd
