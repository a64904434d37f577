// Completion state shared by the caller (poll/wait/result) and the
// background thread (Complete). One HandleState may cover several tensors
// (grouped operations): it is done when the last one completes, with the
// first error seen. Grouped allgather/reducescatter keep one result per
// tensor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/host_buffer.h"
#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

// Background work a waiting caller may do itself (core/runtime/
// loop_progress.h): one step of its process set's loop, so that a burst is
// negotiated and reduced on the waiting thread, as a raw MPI rank works,
// instead of on the loop's thread, which a busy or stolen core may take
// milliseconds to run again once woken.
class Progress {
 public:
  enum class Step {
    kDid,   // a step did some work
    kIdle,  // a step found nothing to do
    kBusy,  // another thread is stepping: let it have the core
    kGone,  // the loop has ended
  };
  virtual ~Progress() = default;
  // A session of steps (Enter, TryStep..., Leave): while one lasts the
  // loop's own thread stands back.
  virtual void Enter() = 0;
  virtual Step TryStep() = 0;
  virtual void Leave() = 0;
};

// The result of an op whose output hvd allocates (allgather, alltoall,
// reducescatter): either owned here or written to caller-allocated memory.
struct OpResult {
  HostBuffer owned;
  // hvd-owned CUDA memory behind `data` for GPU results without a caller
  // allocator (type-erased so this header needs no CUDA); freed with the handle.
  std::shared_ptr<void> device_owned;
  void* data = nullptr;
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;
  Device device;
  std::vector<int32_t> recv_splits;
  int64_t value = -1;         // join: last rank to join; add_process_set: the new id
  std::string alloc_failure;  // why hvd's own device allocation failed, if it did
};

class HandleState {
 public:
  // Gets the handle's id (set_id) and final status.
  using Callback = std::function<void(int64_t, const Status&)>;

  // `results`: how many OpResults the covered tensors write (1 unless a
  // grouped operation gives each tensor a result of its own).
  HandleState(int pending, Callback callback, int results = 1)
      : pending_(pending),
        callback_(std::move(callback)),
        more_results_(results > 1 ? static_cast<size_t>(results - 1) : 0) {}

  // The C API's id for this state, passed to the callback; set before submission.
  void set_id(int64_t id) { id_ = id; }
  // Whether a completion callback is set; valid before the first completion.
  bool has_callback() const { return static_cast<bool>(callback_); }

  // Called once per covered tensor from the background thread.
  void Complete(const Status& s);
  // Completes one tensor of each state (a state may appear more than once),
  // waking waiters and running callbacks only after all are marked: a thread
  // waiting on a fused batch in order then sleeps once, not once per tensor.
  static void CompleteAll(const std::vector<HandleState*>& states, const Status& s);
  // kInProgress until done, then the final status.
  Status Poll();
  // timeout_ms < 0 waits forever. On timeout returns Code::kTimeout and sets
  // *timed_out (when given): the operation's own status may be kTimeout too.
  // A wait on a collective that blocks counts in Waits() (wait_totals.h).
  Status Wait(int64_t timeout_ms, bool* timed_out = nullptr);
  bool done();
  // When a collective of this handle started to run, every rank having
  // submitted it (SteadyNs; the last of a grouped handle's): splits a wait
  // into time for slower ranks and time for data.
  void MarkStarted(int64_t steady_ns) { started_ns_.store(steady_ns, std::memory_order_relaxed); }

  // Result of tensor i (0 <= i < num_results()); written only by the
  // background thread before completion and read by callers after it.
  OpResult& result(int i = 0) {
    return i == 0 ? result_ : more_results_[static_cast<size_t>(i - 1)];
  }
  int num_results() const { return 1 + static_cast<int>(more_results_.size()); }
  // Point-to-point handles (runtime/p2p_engine.h): while Wait waits, it
  // calls `poller` to complete messages itself instead of sleeping until
  // another thread does, which saves a thread hop per message. Set before
  // the handle is shared. Wait polls for `budget` before it sleeps: about
  // as long as the messages take to arrive, as MPI_Recv would spin.
  using Poller = std::function<void()>;
  void set_poller(Poller poller, std::chrono::nanoseconds budget) {
    poller_ = std::move(poller);
    poll_budget_ = budget;
  }
  // How long Wait keeps the core before it sleeps (Config::wait_spin_us);
  // set at init for every handle.
  static void SetWaitSpin(std::chrono::nanoseconds spin);
  // What Wait drives while it keeps the core; set before the handle is
  // shared (null: it only yields).
  void set_progress(std::shared_ptr<Progress> progress) { progress_ = std::move(progress); }

 private:
  // Marks one tensor done; true (with what to do next) when it was the
  // last. Lock-free unless `s` is an error: every tensor of a training step
  // comes through here.
  bool Finish(const Status& s, bool* wake, Callback* cb);
  // Wait, uncounted.
  Status Block(int64_t timeout_ms, bool* timed_out);
  // Wait's first part for handles with a poller: polls for a short while;
  // true once done.
  bool WaitPolling();
  // Wait's first part for the others: true once done within the spin.
  bool WaitSpinning(int64_t timeout_ms);
  // WaitSpinning's loop with a Progress to drive; true once done.
  bool WaitDriving(std::chrono::nanoseconds spin, int64_t timeout_ms);
  // Wakes the threads blocked in Wait.
  void WakeWaiters();
  uint32_t* done_word() { return reinterpret_cast<uint32_t*>(&done_); }

  std::mutex mu_;  // for errors
  // Tensors still to complete. The completion that takes it to zero
  // finishes the state; any past zero (a tensor the watchdog failed, then
  // the loop finished) is ignored.
  std::atomic<int> pending_;
  int64_t id_ = 0;
  // 1 once status_ is final: readers that see it (acquire) read status_
  // without the lock. Waiters sleep on it as a futex word: a condition
  // variable would cost every state a locked instruction when destroyed.
  std::atomic<uint32_t> done_{0};
  std::atomic<int> waiters_{0};  // threads blocked in Wait (skip futile wake-ups)
  std::atomic<bool> failed_{false};
  std::atomic<int64_t> started_ns_{0};
  Status error_;   // the first error (under mu_)
  Status status_;  // written once, by the finishing completion
  Callback callback_;
  Poller poller_;
  std::chrono::nanoseconds poll_budget_{0};
  std::shared_ptr<Progress> progress_;
  OpResult result_;
  std::vector<OpResult> more_results_;  // results 1.. of a grouped operation
};

}  // namespace hvd
