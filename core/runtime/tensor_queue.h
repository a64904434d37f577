// Where caller threads hand tensors to one process set's background loop: a
// table of pending entries by name (pooled: see PendingEntries) and the
// requests not yet negotiated. One lock. The loop sleeps in poll() on the queue's event descriptor
// (next to its channel's sockets); a submission writes to it only while the loop sleeps, so a burst
// of submissions costs one wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/spin_lock.h"
#include "core/runtime/pending_entries.h"

namespace hvd {

class TensorQueue {
 public:
  TensorQueue();
  ~TensorQueue();
  TensorQueue(const TensorQueue&) = delete;
  TensorQueue& operator=(const TensorQueue&) = delete;

  // Takes `count` entries in atomically (a group goes in whole or not at
  // all), giving the caller cleared pooled entries in exchange, with memory
  // to reuse. Fails with kInvalidArgument if a name is already pending, or
  // with the closing status once the queue is closed; the caller's entries
  // are then as they were.
  Status Add(std::unique_ptr<TensorEntry>* entries, size_t count);
  // Replaces *out with the new requests since the last call (swapping
  // vectors, so both keep their capacity from cycle to cycle). They point
  // into the pending entries, which only the loop removes (Take, Close), so
  // they stay valid until it takes them.
  void PopRequests(std::vector<const Request*>* out);
  // Unlinks the entry of each name and points found[i] at it (no copy);
  // found[i] stays null where this rank has none (joined). One lock for
  // all. Returns how many were found. The loop owns the taken entries until
  // it hands them back with Recycle.
  size_t Take(const std::vector<std::string>& names, TensorEntry** found);
  // Clears taken entries (null ones are skipped) and returns them to the pool.
  void Recycle(const std::vector<TensorEntry*>& taken);

  // The descriptor that becomes readable when the loop should wake (new
  // requests or Wake()). The loop calls Sleeping(true) before it polls and
  // Sleeping(false) after, which drains the descriptor.
  int event_fd() const { return event_fd_; }
  // True (and the loop must not sleep) when requests or a wake-up are waiting.
  bool Sleeping(bool sleeping);
  void Wake();
  bool HasRequests();
  // How many requests were ever added: a lock-free way to see new ones.
  uint64_t submitted() const { return submitted_.load(std::memory_order_relaxed); }

  // Fails every pending entry with `s` and refuses new ones with it (the
  // first closing status stays).
  void Close(const Status& s);
  void Reopen();
  size_t PendingCount();
  // The oldest pending entry's submission time (max() when none), and its name.
  std::chrono::steady_clock::time_point Oldest(std::string* name);
  // When `name` was submitted, if it is pending.
  bool PendingSince(const std::string& name, std::chrono::steady_clock::time_point* since);

 private:
  void Signal();

  SpinLock mu_;  // held for a few dozen instructions (Take: one pass over a batch)
  bool closed_ = false;
  Status closed_status_;
  bool wake_ = false;
  std::atomic<bool> sleeping_{false};
  int event_fd_ = -1;
  std::atomic<uint64_t> submitted_{0};  // every request ever added, read without the lock
  PendingEntries pending_;
  std::vector<const Request*> requests_;
};

}  // namespace hvd
