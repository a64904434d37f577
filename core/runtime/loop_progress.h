// A set loop's steps, offered to the callers that wait on the set's
// handles (HandleState::Wait). Under a busy neighbour or CPU steal every
// hand-off to hvd's loop thread costs a wait for a core (W4: about 3.5 per
// iteration and rank, 1.5 ms each); a caller that steps the loop itself
// while it waits negotiates and reduces on the thread that already runs,
// as a raw MPI rank progresses its own requests.
//
// One lock makes the steps take turns: the loop's thread takes it to step,
// callers only try it. While a caller is in a session (Enter..Leave) the
// loop's thread parks instead of stepping and sleeping by its usual plan;
// the last caller to leave wakes it.
#pragma once

#include <atomic>
#include <mutex>

#include "core/common/spin_lock.h"
#include "core/tensor/handle_state.h"

namespace hvd {

class SetLoop;

class LoopProgress : public Progress {
 public:
  explicit LoopProgress(SetLoop* loop) : loop_(loop) {}

  void Enter() override;
  Step TryStep() override;
  void Leave() override;

  // The step's lock, held by whoever steps (and by the loop's thread
  // while it plans a sleep).
  std::mutex& mu() { return mu_; }
  // Whether a caller is in a session.
  bool driven() const { return drivers_.load() > 0; }
  // The loop's thread, about to park: true to park (a caller is still in
  // a session, and Leave will wake it), false to go on.
  bool Park();
  void Unpark() { parked_.store(false); }
  // The loop is ending: callers step no more. Takes mu() the first time
  // only: the set's destructor calls it again under the runtime's lock,
  // which a step (adding a set) takes inside mu().
  void Detach();

 private:
  std::mutex mu_;
  SetLoop* loop_;     // null once detached (under mu_ and wake_mu_)
  SpinLock wake_mu_;  // lets Leave reach loop_ without waiting for a step
  std::atomic<int> drivers_{0};
  std::atomic<bool> parked_{false};
  std::atomic<bool> detached_{false};
};

}  // namespace hvd
