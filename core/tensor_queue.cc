#include "core/tensor_queue.h"

#include <thread>

namespace hvd {

Status TensorQueue::Add(std::vector<TensorEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return closed_status_;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Request& q = entries[i].request;
      auto& table = entries_[q.process_set];
      bool dup_in_call = false;
      for (size_t j = 0; j < i; ++j) {
        dup_in_call |=
            entries[j].request.name == q.name && entries[j].request.process_set == q.process_set;
      }
      if (dup_in_call || table.count(q.name)) {
        return Status::Invalid(
            "a tensor named '" + q.name + "' is already pending in process set " +
            std::to_string(q.process_set) + "; names must be unique among operations in flight");
      }
    }
    for (auto& e : entries) {
      const int32_t set = e.request.process_set;
      requests_[set].push_back(e.request);
      std::string name = e.request.name;
      entries_[set].emplace(std::move(name), std::move(e));
      ++new_requests_;
      submitted_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  cv_.notify_one();
  return Status::OK();
}

std::vector<Request> TensorQueue::PopRequests(int32_t set) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find(set);
  if (it == requests_.end()) return {};
  std::vector<Request> out = std::move(it->second);
  requests_.erase(it);
  new_requests_ -= out.size();
  return out;
}

bool TensorQueue::Take(int32_t set, const std::string& name, TensorEntry* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto sit = entries_.find(set);
  if (sit == entries_.end()) return false;
  auto it = sit->second.find(name);
  if (it == sit->second.end()) return false;
  *out = std::move(it->second);
  sit->second.erase(it);
  return true;
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

std::vector<std::string> TensorQueue::OlderThan(int32_t set,
                                                std::chrono::steady_clock::duration age) {
  std::vector<std::string> names;
  auto cutoff = std::chrono::steady_clock::now() - age;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(set);
  if (it == entries_.end()) return names;
  for (const auto& kv : it->second) {
    if (kv.second.enqueued < cutoff) names.push_back(kv.first);
  }
  return names;
}

}  // namespace hvd
