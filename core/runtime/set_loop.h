// The background loop of one process set on one rank. It sleeps until
// something happens — a local submission, a message on the set's channel,
// a due timer — then reports new work to the coordinator, applies the
// coordinator's decisions and executes the collectives they name, in order.
// Nothing runs while nothing is pending: no cycles, no collectives, no
// polling on channels that can wake the loop themselves; over MPI, which
// cannot, it polls only while it waits for a decision.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/coordination/coordinator.h"
#include "core/coordination/fusion.h"
#include "core/coordination/negotiator.h"
#include "core/observability/autotune/tuned_params.h"
#include "core/runtime/loop_progress.h"
#include "core/runtime/process_set.h"

namespace hvd {

class Runtime;

class SetLoop {
 public:
  // `ps` must be a member set with its comms and channel open.
  SetLoop(Runtime& runtime, ProcessSet& ps, const TunedParams& params);
  ~SetLoop();
  SetLoop(const SetLoop&) = delete;
  SetLoop& operator=(const SetLoop&) = delete;

  void Start();
  // Asks the set to shut down (negotiated, so no member is left inside a
  // collective); `why` replaces the final status when not OK.
  void RequestStop(const Status& why = Status::OK());
  // Ends the loop at its next step without negotiating (a coordinator that
  // does not answer), failing what is pending with `why`.
  void Abandon(const Status& why);
  void Join();
  bool finished() const { return finished_.load(); }

  // What the loop is executing, for the watchdog and for liveness probes.
  struct Activity {
    bool executing = false;
    std::string what;  // "allreduce of 'grad.3'" while executing
    // The oldest submission among the tensors in flight: their deadline runs
    // from there.
    std::chrono::steady_clock::time_point since;
  };
  Activity activity() const;
  // Fails the handles of the collective in flight (the watchdog, when it
  // cannot complete), each once.
  void FailInFlight(const Status& s);
  // One line for a liveness probe: what this rank is doing in this set, and
  // whether it holds `tensor`.
  std::string Describe(const std::string& tensor) const;

  // What the set's handles let their waiting callers drive.
  const std::shared_ptr<LoopProgress>& progress() const { return progress_; }
  // LoopProgress, with progress()->mu() held: one step on a caller's
  // thread; the loop's thread parked or sleeping since before the caller's
  // session woken if it planned to sleep too long.
  Progress::Step CallerStep();
  void WakeIfLate();
  // LoopProgress, without the lock: the last caller left a parked loop.
  void WakeParked() { ps_.queue.Wake(); }

 private:
  using Clock = std::chrono::steady_clock;

  void Run();
  Status Step(bool* stop);
  // Marks the loop ended when a step failed or negotiated the shutdown.
  void EndIf(const Status& s, bool stop);
  // Waits for the end of a burst of submissions, negotiating as they come.
  void GatherBurst();
  // Between steps (lock held; released while it sleeps).
  void Wait(std::unique_lock<std::mutex>& lock);
  // How long the loop may sleep now (max(): until woken); *napping: it
  // polls a channel for an expected decision.
  Clock::duration SleepTimeout(Clock::time_point now, bool* napping = nullptr) const;
  // Until the coordinator's next stall check (max(): none due).
  Clock::duration UntilCheck(Clock::time_point now) const;
  // While callers drive: sleep until a submission, their Leave or a check.
  void Park(std::unique_lock<std::mutex>& lock);
  // Sleeps on the queue's descriptor and `fds` up to `timeout`, with the
  // lock released.
  void Sleep(std::unique_lock<std::mutex>& lock, Clock::duration timeout,
             const std::vector<ControlChannel::PollFd>& fds);
  Status Send(const Report& report);
  Status ReceiveMessages(std::vector<Decision>* decisions);
  Status Coordinate(std::vector<Decision>* decisions);
  Status ApplyDecision(const Decision& d, bool* stop);
  // Takes this rank's entries of a (fused) response and runs it; the status
  // is fatal only when the set cannot go on.
  Status Execute(const Response& response);
  // The collective itself, traced and visible to the watchdog.
  Status RunCollective(const Response& response, std::vector<TensorEntry*>& entries);
  Status FinalStatus(const Status& fatal) const;
  // Whether one of `entries` was submitted HVD_OP_TIMEOUT_SECONDS ago (less
  // a second: the coordinator's clock started when it heard of it).
  bool PastDeadline(const std::vector<TensorEntry*>& entries) const;
  void SetActivity(const Response* r, const std::vector<TensorEntry*>& entries);
  Status Explain(const Status& fatal);

  Runtime& runtime_;
  ProcessSet& ps_;
  TunedParams params_;
  Negotiator negotiator_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 of the set only
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> finished_{false};
  // Under progress_->mu(): whoever steps owns everything below up to mu_.
  std::shared_ptr<LoopProgress> progress_;
  bool ended_ = false;
  Status end_status_;  // the fatal error that ended the loop, if any
  // When the loop's thread, asleep, planned to wake (min(): awake).
  Clock::time_point asleep_until_ = Clock::time_point::min();
  bool stop_reported_ = false;
  Status stop_reason_;               // from RequestStop (under mu_)
  std::vector<int32_t> stop_ranks_;  // who asked, per the coordinator
  Clock::time_point last_activity_;
  Clock::duration nap_;
  std::vector<ControlChannel::PollFd> fds_;
  std::vector<const Request*> popped_;   // the last cycle's new requests (capacity reused)
  FusionMemo fusion_memo_;               // a step's fused responses, again next step
  std::pair<Status, Status> explained_;  // the last fatal error and what probes added

  // The collective in flight, guarded by mu_. Pointers into RunCollective's
  // arguments, cleared before they go: the watchdog reads them only under
  // mu_, so a fused batch of 1000 tensors costs two stores, not copies of
  // its names and handles.
  mutable std::mutex mu_;  // guards the three below and stop_reason_
  const Response* exec_response_ = nullptr;
  const std::vector<TensorEntry*>* exec_entries_ = nullptr;
  Clock::time_point exec_started_;
  bool exec_failed_ = false;  // FailInFlight ran for it
};

}  // namespace hvd
