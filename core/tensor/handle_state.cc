#include "core/tensor/handle_state.h"

#include <sched.h>

#include <algorithm>

#include "core/common/futex.h"
#include "core/common/spin_lock.h"
#include "core/tensor/wait_totals.h"

namespace hvd {
namespace {

std::atomic<int64_t> g_wait_spin_ns{0};

}  // namespace

void HandleState::SetWaitSpin(std::chrono::nanoseconds spin) {
  g_wait_spin_ns.store(spin.count(), std::memory_order_relaxed);
}

bool HandleState::Finish(const Status& s, bool* wake, Callback* cb) {
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = s;
    failed_.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
  }
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  if (failed_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = error_;
  }
  if (callback_) *cb = std::move(callback_);
  // seq_cst with Wait's increment of waiters_ and its read of done_: either
  // the waiter sees done_, or this sees the waiter.
  done_.store(1, std::memory_order_seq_cst);
  *wake = waiters_.load(std::memory_order_seq_cst) > 0;
  return true;
}

void HandleState::WakeWaiters() {
  // A waiter between its check of done_ and its sleep does not sleep: the
  // kernel compares the word with 0 first.
  FutexWakeAll(done_word(), /*shared=*/false);
}

void HandleState::Complete(const Status& s) {
  Callback cb;
  bool wake = false;
  if (!Finish(s, &wake, &cb)) return;
  if (wake) WakeWaiters();
  // The callback may poll or release its own handle. status_ is final once done.
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
    if (d.wake) d.state->WakeWaiters();
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

bool HandleState::WaitPolling() {
  // Busy while the messages should arrive, as MPI waits, then the caller
  // sleeps and the poller's own thread finishes the work.
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + poll_budget_;
  for (int spins = 0; !done_.load(std::memory_order_acquire); ++spins) {
    poller_();
    if (done_.load(std::memory_order_acquire)) break;
    // Never sched_yield: with other work on the core it hands that work a
    // whole time slice while the message has already arrived.
    CpuRelax();
    if ((spins & 15) == 0 && Clock::now() > until) return false;
  }
  return true;
}

bool HandleState::WaitSpinning(int64_t timeout_ms) {
  // On a VM whose host is busy, a vCPU that goes idle while its threads
  // sleep can take milliseconds to run again once woken (CPU steal):
  // W4 took 4.4-9.8 ms instead of 1.0-1.4 in such phases. Yielding keeps the vCPU
  // busy while handing the core to whatever is runnable, hvd's own loop
  // first, as a raw MPI rank keeps its core by polling.
  using Clock = std::chrono::steady_clock;
  int64_t spin_ns = g_wait_spin_ns.load(std::memory_order_relaxed);
  if (timeout_ms >= 0) spin_ns = std::min(spin_ns, timeout_ms * 1000000);
  if (spin_ns <= 0) return false;
  const auto until = Clock::now() + std::chrono::nanoseconds(spin_ns);
  for (int i = 0; i < 64; ++i) {  // a completion already on its way
    if (done_.load(std::memory_order_acquire)) return true;
    CpuRelax();
  }
  if (progress_) return WaitDriving(std::chrono::nanoseconds(spin_ns), timeout_ms);
  do {
    sched_yield();
    if (done_.load(std::memory_order_acquire)) return true;
  } while (Clock::now() < until);
  return false;
}

bool HandleState::WaitDriving(std::chrono::nanoseconds spin, int64_t timeout_ms) {
  // This thread does the loop's work. Right after a step that worked, the
  // next message usually follows within microseconds: poll for it without
  // giving the core away (a sched_yield hands a busy neighbour a whole
  // slice). Past that, and while another of hvd's threads holds the step,
  // yield between steps, so that a peer's thread queued on this core runs.
  // The spin counts from the last step that worked: a caller that reduces
  // for a while, or is preempted, keeps driving.
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::microseconds kPoll{50};
  const auto start = Clock::now();
  const auto deadline =
      timeout_ms >= 0 ? start + std::chrono::milliseconds(timeout_ms) : Clock::time_point::max();
  auto until = std::min(deadline, start + spin);
  auto worked = start;
  progress_->Enter();
  bool done = false;
  for (;;) {
    const Progress::Step step = progress_->TryStep();
    done = done_.load(std::memory_order_acquire);
    if (done || step == Progress::Step::kGone) break;
    const auto now = Clock::now();
    if (step == Progress::Step::kDid) {
      worked = now;
      until = std::min(deadline, now + spin);
    }
    if (now >= until) break;
    if (step == Progress::Step::kIdle && now - worked < kPoll) {
      CpuRelax();
    } else if (step != Progress::Step::kDid) {
      sched_yield();
    }
  }
  progress_->Leave();
  return done;
}

Status HandleState::Wait(int64_t timeout_ms, bool* timed_out) {
  // The common case after a batch: done already, no lock, no deadline.
  if (done_.load(std::memory_order_acquire)) return status_;
  // Point-to-point messages are not negotiated; a zero timeout is a poll.
  if (poller_ || timeout_ms == 0) return Block(timeout_ms, timed_out);
  const int64_t begin = SteadyNs();
  Status s = Block(timeout_ms, timed_out);
  CountWait(begin, SteadyNs(), started_ns_.load(std::memory_order_relaxed));
  return s;
}

Status HandleState::Block(int64_t timeout_ms, bool* timed_out) {
  if (poller_ && timeout_ms != 0 && WaitPolling()) return status_;
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  if (!poller_ && timeout_ms != 0 && WaitSpinning(timeout_ms)) return status_;
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool finished = true;
  while (!done_.load(std::memory_order_seq_cst)) {
    int64_t left_ns = -1;
    if (timeout_ms >= 0) {
      left_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now()).count();
      if (left_ns <= 0) {
        finished = done_.load(std::memory_order_acquire);
        break;
      }
    }
    FutexWait(done_word(), 0, left_ns, /*shared=*/false);
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  if (!finished) {
    if (timed_out) *timed_out = true;
    return Status::Timeout("the operation did not finish within " + std::to_string(timeout_ms) +
                           " ms (it keeps running)");
  }
  return status_;
}

}  // namespace hvd
