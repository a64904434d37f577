// Point-to-point messages (hvd_send_async, hvd_recv_async,
// hvd_batch_isend_irecv) outside the negotiation of collectives: messages
// are posted on the caller's thread, in call order, on a Comm of their own
// (a split of the world's controller Comm over all ranks), and one thread
// polls them to completion, enforces the operation deadline and names the
// peer in every error. A message done when posted completes on the caller's
// thread, and callers waiting in hvd_wait poll every active message
// themselves while the engine's thread stands back.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/backends/comm.h"
#include "core/tensor/handle_state.h"

namespace hvd {

struct P2POp {
  bool recv = false;
  void* buf = nullptr;  // read (send) or written (recv); host memory
  int64_t bytes = 0;
  int peer = -1;      // world rank (the engine's Comm spans the world)
  int set_peer = -1;  // the peer's rank in `set`, for messages
  int32_t set = 0;
  int tag = 0;
};

class P2PEngine {
 public:
  // `names[r]`: "rank r (host h)". `describe(r)` says what world rank r is
  // doing (a liveness probe, up to a second); called when a deadline passes.
  P2PEngine(std::unique_ptr<Comm> comm, std::vector<std::string> names, double op_timeout_s,
            std::function<std::string(int)> describe);
  // Fails what is still pending with kShutDown.
  ~P2PEngine();
  P2PEngine(const P2PEngine&) = delete;
  P2PEngine& operator=(const P2PEngine&) = delete;

  // Posts `ops` in order; each completes `state` once. An error posting the
  // first op is returned (nothing posted); a later one fails the rest
  // through `state`. `fn` names the C function in messages.
  Status Submit(const char* fn, const std::vector<P2POp>& ops,
                const std::shared_ptr<HandleState>& state);

 private:
  struct Pending {
    std::unique_ptr<P2PRequest> request;
    std::shared_ptr<HandleState> state;
    P2POp op;
    const char* fn;
    std::chrono::steady_clock::time_point deadline;
  };
  // What the engine's thread and waiting callers (HandleState's poller)
  // share; a poller holds it weakly, so a handle may outlive the engine.
  struct Core {
    std::unique_ptr<Comm> comm;
    std::vector<std::string> names;
    double op_timeout_s = 0;
    std::function<std::string(int)> describe;
    std::mutex mu;  // active, stop; held while polling
    std::condition_variable cv;
    std::vector<Pending> active;
    bool stop = false;
    // When a caller waiting in hvd_wait last polled (steady_clock ticks):
    // while callers poll, they complete every active message and the
    // engine's thread stays out of their way (no second thread on the lock
    // and the transport, no core taken from the peer on a busy machine).
    std::atomic<int64_t> caller_polled{0};
    bool parked = false;  // the thread waits for a post, with nothing active (mu)
    // Whether a caller polled within `within` (the engine may then leave
    // the messages to it).
    bool CallerPolling(std::chrono::steady_clock::duration within) const;

    // Tests every active message once (mu held); true if any completed.
    // The caller completes *finished after releasing mu.
    using Finished = std::vector<std::pair<std::shared_ptr<HandleState>, Status>>;
    bool Poll(Finished* finished);
    // "hvd_recv_async from rank 1 (host a), tag 3 (16 bytes)"
    std::string Describe(const Pending& p) const;
    Status Named(const Pending& p, const Status& s) const;
  };
  using Finished = Core::Finished;
  void Run();

  std::shared_ptr<Core> core_;
  std::mutex post_mu_;  // posting order is call order
  std::thread thread_;  // last: started when everything above exists
};

}  // namespace hvd
