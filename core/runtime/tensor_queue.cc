#include "core/runtime/tensor_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <utility>

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

Status TensorQueue::Add(std::unique_ptr<TensorEntry>* entries, size_t count) {
  if (count == 0) return Status::OK();
  const int32_t set = entries[0]->request.process_set;
  {
    std::lock_guard<SpinLock> lock(mu_);
    if (closed_) return closed_status_;
    size_t added = 0;
    for (; added < count; ++added) {
      TensorEntry* slot = pending_.Insert(&entries[added]);
      if (!slot) break;
      requests_.push_back(&slot->request);
    }
    if (added < count) {
      // A name already pending (or twice in this call): undo the whole call,
      // giving the caller its entries back.
      for (size_t i = added; i-- > 0;) {
        pending_.Uninsert(requests_.back()->name, &entries[i]);
        requests_.pop_back();
      }
      return Status::Invalid("a tensor named '" + entries[added]->request.name +
                             "' is already pending in process set " + std::to_string(set) +
                             "; names must be unique among operations in flight");
    }
    // Written only under mu_: a plain store, no locked read-modify-write.
    submitted_.store(submitted_.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
  }
  // A plain load first: the loop is usually awake during a burst, and the
  // exchange is a locked instruction.
  if (sleeping_.load(std::memory_order_relaxed) && sleeping_.exchange(false)) Signal();
  return Status::OK();
}

void TensorQueue::PopRequests(std::vector<const Request*>* out) {
  out->clear();
  std::lock_guard<SpinLock> lock(mu_);
  out->swap(requests_);
}

size_t TensorQueue::Take(const std::vector<std::string>& names, TensorEntry** found) {
  std::lock_guard<SpinLock> lock(mu_);
  size_t count = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    TensorEntry* e = pending_.Remove(names[i]);
    if (!e) continue;
    found[i] = e;
    ++count;
  }
  return count;
}

void TensorQueue::Recycle(const std::vector<TensorEntry*>& taken) {
  // Clearing drops the handles' references: outside the lock.
  for (TensorEntry* e : taken) {
    if (e) e->Clear();
  }
  std::lock_guard<SpinLock> lock(mu_);
  for (TensorEntry* e : taken) {
    if (e) pending_.Recycle(e);
  }
}

bool TensorQueue::Sleeping(bool sleeping) {
  if (sleeping) {
    sleeping_.store(true);
    std::lock_guard<SpinLock> lock(mu_);
    if (requests_.empty() && !wake_) return false;
    wake_ = false;  // seen: the loop steps before it sleeps again
    sleeping_.store(false);
    return true;
  }
  sleeping_.store(false);
  uint64_t drained;
  ssize_t n = ::read(event_fd_, &drained, sizeof(drained));
  (void)n;  // EAGAIN: nothing was signalled
  std::lock_guard<SpinLock> lock(mu_);
  wake_ = false;
  return false;
}

void TensorQueue::Wake() {
  {
    std::lock_guard<SpinLock> lock(mu_);
    wake_ = true;
  }
  if (sleeping_.exchange(false)) Signal();
}

bool TensorQueue::HasRequests() {
  std::lock_guard<SpinLock> lock(mu_);
  return !requests_.empty();
}

void TensorQueue::Close(const Status& s) {
  std::vector<TensorEntry*> failed;
  Status status;
  {
    std::lock_guard<SpinLock> lock(mu_);
    if (!closed_) closed_status_ = s;
    closed_ = true;
    status = closed_status_;
    pending_.RemoveAll(&failed);
    requests_.clear();
  }
  // Complete outside the lock: callbacks may submit (and get the error).
  for (TensorEntry* e : failed) e->handle->Complete(status);
  Recycle(failed);
}

void TensorQueue::Reopen() {
  std::lock_guard<SpinLock> lock(mu_);
  closed_ = false;
  closed_status_ = Status::OK();
  wake_ = false;
}

size_t TensorQueue::PendingCount() {
  std::lock_guard<SpinLock> lock(mu_);
  return pending_.size();
}

std::chrono::steady_clock::time_point TensorQueue::Oldest(std::string* name) {
  std::lock_guard<SpinLock> lock(mu_);
  auto oldest = std::chrono::steady_clock::time_point::max();
  pending_.ForEach([&](const TensorEntry* e) {
    if (e->enqueued < oldest) {
      oldest = e->enqueued;
      *name = e->request.name;
    }
  });
  return oldest;
}

bool TensorQueue::PendingSince(const std::string& name,
                               std::chrono::steady_clock::time_point* since) {
  std::lock_guard<SpinLock> lock(mu_);
  const TensorEntry* e = pending_.Find(name);
  if (!e) return false;
  *since = e->enqueued;
  return true;
}

}  // namespace hvd
