// Where caller threads hand tensors to the background thread: a table of
// pending entries by (process set, name) and the requests not yet sent to
// negotiation. One mutex; the background thread sleeps on its condition.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor/tensor_entry.h"

namespace hvd {

class TensorQueue {
 public:
  // Moves `count` entries in atomically (a group goes in whole or not at
  // all). Fails with kInvalidArgument if a name is already pending in its
  // set, or with `closed_status` once the queue is closed.
  Status Add(TensorEntry* entries, size_t count);
  // New requests of process set `set` since the last call. They point into
  // the pending entries, which only the background thread removes (Take,
  // FailSet, Close), so they stay valid until it takes them.
  std::vector<const Request*> PopRequests(int32_t set);
  // A taken entry: the table's own node, unlinked (no copy of the entry).
  using Taken = std::unordered_map<std::string, TensorEntry>::node_type;
  // Unlinks the entry of each name into taken[i] and points found[i] at it;
  // found[i] stays null where this rank has none (joined). One lock for all.
  // Returns how many were found.
  size_t Take(int32_t set, const std::vector<std::string>& names, Taken* taken,
              TensorEntry** found);
  // Waits until new requests arrive, Wake() is called or `deadline` passes.
  void WaitForWork(std::chrono::steady_clock::time_point deadline);
  // After a wake-up: while callers are still submitting (a burst of async
  // ops), yield until no request arrived for `quiet` or `max_wait` passed, so
  // the burst is negotiated and fused in one cycle instead of many.
  void WaitForBurstEnd(std::chrono::steady_clock::duration quiet,
                       std::chrono::steady_clock::duration max_wait);
  void Wake();
  bool HasRequests();
  // Fails every pending entry with `s` and refuses new ones with it.
  void Close(const Status& s);
  // Fails the pending entries of one set (set removed, peer lost...).
  void FailSet(int32_t set, const Status& s);
  void Reopen();
  size_t PendingCount(int32_t set);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool wake_ = false;
  Status closed_status_;
  size_t new_requests_ = 0;
  std::atomic<uint64_t> submitted_{0};  // every request ever added, read without the lock
  std::map<int32_t, std::unordered_map<std::string, TensorEntry>> entries_;
  std::map<int32_t, std::vector<const Request*>> requests_;
};

}  // namespace hvd
