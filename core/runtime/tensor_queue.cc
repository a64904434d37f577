#include "core/runtime/tensor_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>

namespace hvd {

TensorQueue::TensorQueue() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

TensorQueue::~TensorQueue() {
  if (event_fd_ >= 0) ::close(event_fd_);
}

void TensorQueue::Signal() {
  const uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof(one));
  (void)n;  // a full counter still wakes the poller
}

Status TensorQueue::Add(TensorEntry* entries, size_t count) {
  if (count == 0) return Status::OK();
  const int32_t set = entries[0].request.process_set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return closed_status_;
    size_t added = 0;
    for (; added < count; ++added) {
      TensorEntry& e = entries[added];
      // One hash per entry; the node's entry is move-constructed (e is left
      // alone when the name is taken). The key is copied before the move.
      auto [it, inserted] = entries_.try_emplace(e.request.name, std::move(e));
      if (!inserted) break;
      requests_.push_back(&it->second.request);
    }
    if (added < count) {
      // A name already pending (or twice in this call): undo the whole call.
      const std::string name = entries[added].request.name;
      for (size_t i = 0; i < added; ++i) {
        const std::string undo = requests_.back()->name;
        requests_.pop_back();
        entries_.erase(undo);
      }
      return Status::Invalid("a tensor named '" + name + "' is already pending in process set " +
                             std::to_string(set) +
                             "; names must be unique among operations in flight");
    }
    submitted_.fetch_add(count, std::memory_order_relaxed);
  }
  if (sleeping_.exchange(false)) Signal();
  return Status::OK();
}

void TensorQueue::PopRequests(std::vector<const Request*>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(requests_);
}

size_t TensorQueue::Take(const std::vector<std::string>& names, Taken* taken, TensorEntry** found) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = entries_.find(names[i]);
    if (it == entries_.end()) continue;
    taken[i] = entries_.extract(it);
    found[i] = &taken[i].mapped();
    ++count;
  }
  return count;
}

bool TensorQueue::Sleeping(bool sleeping) {
  if (sleeping) {
    sleeping_.store(true);
    std::lock_guard<std::mutex> lock(mu_);
    if (requests_.empty() && !wake_) return false;
    sleeping_.store(false);
    return true;
  }
  sleeping_.store(false);
  uint64_t drained;
  ssize_t n = ::read(event_fd_, &drained, sizeof(drained));
  (void)n;  // EAGAIN: nothing was signalled
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = false;
  return false;
}

void TensorQueue::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  if (sleeping_.exchange(false)) Signal();
}

bool TensorQueue::HasRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  return !requests_.empty();
}

void TensorQueue::WaitForBurstEnd(std::chrono::steady_clock::duration quiet,
                                  std::chrono::steady_clock::duration max_wait) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_change = start;
  uint64_t seen = submitted_.load(std::memory_order_relaxed);
  for (auto now = start; now - last_change < quiet && now - start < max_wait; now = Clock::now()) {
    // Yield rather than spin: the submitting thread may need this core.
    std::this_thread::yield();
    const uint64_t c = submitted_.load(std::memory_order_relaxed);
    if (c != seen) {
      seen = c;
      last_change = Clock::now();
    }
  }
}

void TensorQueue::Close(const Status& s) {
  std::unordered_map<std::string, TensorEntry> failed;
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_) closed_status_ = s;
    closed_ = true;
    status = closed_status_;
    failed.swap(entries_);
    requests_.clear();
  }
  // Complete outside the lock: callbacks may submit (and get the error).
  for (auto& kv : failed) kv.second.handle->Complete(status);
}

void TensorQueue::Reopen() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = false;
  closed_status_ = Status::OK();
  wake_ = false;
}

size_t TensorQueue::PendingCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::chrono::steady_clock::time_point TensorQueue::Oldest(std::string* name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto oldest = std::chrono::steady_clock::time_point::max();
  for (const auto& kv : entries_) {
    if (kv.second.enqueued < oldest) {
      oldest = kv.second.enqueued;
      *name = kv.first;
    }
  }
  return oldest;
}

bool TensorQueue::PendingSince(const std::string& name,
                               std::chrono::steady_clock::time_point* since) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return false;
  *since = it->second.enqueued;
  return true;
}

}  // namespace hvd
