#include "core/tensor/handle_state.h"

namespace hvd {

bool HandleState::Finish(const Status& s, bool* wake, Callback* cb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return false;
  if (!s.ok() && status_.ok()) status_ = s;
  if (--pending_ > 0) return false;
  done_.store(true, std::memory_order_release);
  if (callback_) *cb = std::move(callback_);
  *wake = waiters_ > 0;
  return true;
}

void HandleState::Complete(const Status& s) {
  Callback cb;
  bool wake = false;
  if (!Finish(s, &wake, &cb)) return;
  if (wake) cv_.notify_all();
  // Outside the lock: the callback may poll or release its own handle.
  // status_ is final once done.
  if (cb) cb(id_, status_);
}

void HandleState::CompleteAll(const std::vector<HandleState*>& states, const Status& s) {
  struct Done {
    HandleState* state;
    bool wake;
    Callback cb;
  };
  std::vector<Done> done;
  for (HandleState* h : states) {
    bool wake = false;
    Callback cb;
    // Only states with a sleeping waiter or a callback need a second pass.
    if (h && h->Finish(s, &wake, &cb) && (wake || cb)) done.push_back({h, wake, std::move(cb)});
  }
  for (auto& d : done) {
    if (d.wake) d.state->cv_.notify_all();
  }
  for (auto& d : done) {
    if (d.cb) d.cb(d.state->id_, d.state->status_);
  }
}

Status HandleState::Poll() {
  return done_.load(std::memory_order_acquire) ? status_ : Status::InProgress();
}

bool HandleState::done() {
  return done_.load(std::memory_order_acquire);
}

Status HandleState::Wait(int64_t timeout_ms, bool* timed_out) {
  // The common case after a batch: done already, no lock, no deadline.
  if (done_.load(std::memory_order_acquire)) return status_;
  std::unique_lock<std::mutex> lock(mu_);
  if (done_) return status_;
  ++waiters_;
  bool finished = true;
  if (timeout_ms < 0) {
    cv_.wait(lock, [this] { return done_.load(); });
  } else {
    finished =
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done_.load(); });
  }
  --waiters_;
  if (!finished) {
    if (timed_out) *timed_out = true;
    return Status::Timeout("the operation did not finish within " + std::to_string(timeout_ms) +
                           " ms (it keeps running)");
  }
  return status_;
}

}  // namespace hvd
