#include "core/runtime/loop_progress.h"

#include "core/runtime/set_loop.h"

namespace hvd {
namespace {

// The LoopProgress whose step this thread is running: a callback that
// waits from inside a step must not try the lock it holds.
thread_local const LoopProgress* t_stepping = nullptr;

}  // namespace

void LoopProgress::Enter() {
  drivers_.fetch_add(1);
}

Progress::Step LoopProgress::TryStep() {
  if (t_stepping == this) return Step::kBusy;
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return Step::kBusy;
  if (!loop_) return Step::kGone;
  t_stepping = this;
  const Step s = loop_->CallerStep();
  t_stepping = nullptr;
  return s;
}

void LoopProgress::Leave() {
  if (drivers_.fetch_sub(1) != 1) return;  // another caller still steps
  // seq_cst against Park: either the loop's thread sees no driver left, or
  // this sees it parked.
  if (parked_.load()) {
    std::lock_guard<SpinLock> lock(wake_mu_);
    if (loop_) loop_->WakeParked();
    return;
  }
  if (t_stepping == this) return;
  // A loop asleep since before the session may need to wake sooner than it
  // planned (a send to progress, a stall check); whoever holds the lock
  // plans again anyway.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (lock.owns_lock() && loop_) loop_->WakeIfLate();
}

bool LoopProgress::Park() {
  parked_.store(true);
  if (drivers_.load() > 0) return true;
  parked_.store(false);
  return false;
}

void LoopProgress::Detach() {
  if (detached_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<SpinLock> wake(wake_mu_);
  loop_ = nullptr;
}

}  // namespace hvd
