#include "core/runtime/tensor_queue.h"

#include <thread>

namespace hvd {

Status TensorQueue::Add(TensorEntry* entries, size_t count) {
  if (count == 0) return Status::OK();
  const int32_t set = entries[0].request.process_set;  // one call submits to one set
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return closed_status_;
    auto& table = entries_[set];
    auto& pending = requests_[set];
    size_t added = 0;
    for (; added < count; ++added) {
      TensorEntry& e = entries[added];
      auto [it, inserted] = table.try_emplace(e.request.name);  // one hash per entry
      if (!inserted) break;
      it->second = std::move(e);
      pending.push_back(&it->second.request);
    }
    if (added < count) {
      // A name already pending (or twice in this call): undo the whole call.
      const std::string name = entries[added].request.name;
      for (size_t i = 0; i < added; ++i) {
        table.erase(pending.back()->name);
        pending.pop_back();
      }
      return Status::Invalid("a tensor named '" + name + "' is already pending in process set " +
                             std::to_string(set) +
                             "; names must be unique among operations in flight");
    }
    new_requests_ += count;
    submitted_.fetch_add(count, std::memory_order_relaxed);
  }
  cv_.notify_one();
  return Status::OK();
}

std::vector<const Request*> TensorQueue::PopRequests(int32_t set) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find(set);
  if (it == requests_.end()) return {};
  std::vector<const Request*> out = std::move(it->second);
  requests_.erase(it);
  new_requests_ -= out.size();
  return out;
}

size_t TensorQueue::Take(int32_t set, const std::vector<std::string>& names, Taken* taken,
                         TensorEntry** found) {
  std::lock_guard<std::mutex> lock(mu_);
  auto sit = entries_.find(set);
  if (sit == entries_.end()) return 0;
  size_t count = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = sit->second.find(names[i]);
    if (it == sit->second.end()) continue;
    taken[i] = sit->second.extract(it);
    found[i] = &taken[i].mapped();
    ++count;
  }
  return count;
}

void TensorQueue::WaitForWork(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [this] { return new_requests_ > 0 || wake_; });
  wake_ = false;
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

void TensorQueue::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

bool TensorQueue::HasRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  return new_requests_ > 0;
}

void TensorQueue::Close(const Status& s) {
  std::map<int32_t, std::unordered_map<std::string, TensorEntry>> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    closed_status_ = s;
    failed.swap(entries_);
    requests_.clear();
    new_requests_ = 0;
  }
  // Complete outside the lock: callbacks may submit (and get the error).
  for (auto& set : failed) {
    for (auto& kv : set.second) kv.second.handle->Complete(s);
  }
}

void TensorQueue::FailSet(int32_t set, const Status& s) {
  std::unordered_map<std::string, TensorEntry> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(set);
    if (it != entries_.end()) {
      failed.swap(it->second);
      entries_.erase(it);
    }
    auto rit = requests_.find(set);
    if (rit != requests_.end()) {
      new_requests_ -= rit->second.size();
      requests_.erase(rit);
    }
  }
  for (auto& kv : failed) kv.second.handle->Complete(s);
}

void TensorQueue::Reopen() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = false;
  closed_status_ = Status::OK();
  wake_ = false;
}

size_t TensorQueue::PendingCount(int32_t set) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(set);
  return it == entries_.end() ? 0 : it->second.size();
}

}  // namespace hvd
