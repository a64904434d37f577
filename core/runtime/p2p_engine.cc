#include "core/runtime/p2p_engine.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>

#include "core/common/logging.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;
// A caller waiting in hvd_wait polls every few microseconds; one that polled
// within this is still waiting, and completes every active message itself.
constexpr auto kCallerActive = std::chrono::milliseconds(1);

std::string Seconds(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

P2PEngine::P2PEngine(std::unique_ptr<Comm> comm, std::vector<std::string> names,
                     double op_timeout_s, std::function<std::string(int)> describe)
    : core_(std::make_shared<Core>()) {
  core_->comm = std::move(comm);
  core_->names = std::move(names);
  core_->op_timeout_s = op_timeout_s;
  core_->describe = std::move(describe);
  thread_ = std::thread(&P2PEngine::Run, this);
}

P2PEngine::~P2PEngine() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->stop = true;
  }
  core_->cv.notify_all();
  thread_.join();
  // What is still pending fails; pollers of those handles then find nothing.
  Finished failed;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    for (auto& p : core_->active) {
      p.request->Abort();
      failed.emplace_back(p.state, Status::ShutDown(core_->Describe(p) +
                                                    ": hvd was shut down before it completed"));
    }
    core_->active.clear();
    core_->comm.reset();
  }
  for (auto& f : failed) f.first->Complete(f.second);
}

std::string P2PEngine::Core::Describe(const Pending& p) const {
  const std::string who = p.op.peer >= 0 && p.op.peer < static_cast<int>(names.size())
                              ? names[static_cast<size_t>(p.op.peer)]
                              : "rank " + std::to_string(p.op.peer);
  std::string s = std::string(p.fn) + (p.op.recv ? " from " : " to ") + who;
  if (p.op.set != 0) {
    s += " (rank " + std::to_string(p.op.set_peer) + " of process set " + std::to_string(p.op.set) +
         ")";
  }
  return s + ", tag " + std::to_string(p.op.tag) + " (" + std::to_string(p.op.bytes) + " bytes)";
}

bool P2PEngine::Core::CallerPolling(Clock::duration within) const {
  const Clock::time_point polled{Clock::duration(caller_polled.load(std::memory_order_relaxed))};
  return Clock::now() - polled < within;
}

Status P2PEngine::Core::Named(const Pending& p, const Status& s) const {
  if (s.ok()) return s;
  return Status(s.code(), Describe(p) + ": " + s.message());
}

Status P2PEngine::Submit(const char* fn, const std::vector<P2POp>& ops,
                         const std::shared_ptr<HandleState>& state) {
  Core& c = *core_;
  const auto deadline = c.op_timeout_s > 0
                            ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(c.op_timeout_s))
                            : Clock::time_point::max();
  std::weak_ptr<Core> weak = core_;
  // A caller waiting polls for 2 ms plus a nanosecond a byte (1 GB/s, slower
  // than any host's memory): a large message is not handed to the engine's
  // thread halfway through.
  int64_t bytes = 0;
  for (const P2POp& op : ops) bytes += op.bytes;
  const auto budget = std::chrono::microseconds(2000) + std::chrono::nanoseconds(bytes);
  state->set_poller(
      [weak] {
        auto core = weak.lock();
        if (!core) return;
        core->caller_polled.store(Clock::now().time_since_epoch().count(),
                                  std::memory_order_relaxed);
        Finished finished;
        {
          std::unique_lock<std::mutex> lock(core->mu, std::try_to_lock);
          if (lock.owns_lock()) core->Poll(&finished);
        }
        for (auto& f : finished) f.first->Complete(f.second);
      },
      budget);
  std::vector<Pending> posted;
  posted.reserve(ops.size());
  Status failed;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    for (const P2POp& op : ops) {
      Pending p{nullptr, state, op, fn, deadline};
      const int64_t stream = P2PStreamTag(op.set, op.tag);
      Status s = op.recv ? c.comm->Irecv(op.buf, op.bytes, op.peer, stream, &p.request)
                         : c.comm->Isend(op.buf, op.bytes, op.peer, stream, &p.request);
      if (!s.ok()) {
        failed = c.Named(p, s);
        break;
      }
      posted.push_back(std::move(p));
    }
  }
  if (!failed.ok() && posted.empty()) return failed;
  for (size_t i = posted.size(); i < ops.size(); ++i) state->Complete(failed);
  // A message that is done as soon as it is posted (a small send that MPI
  // buffers eagerly, a receive whose message is already here) completes on
  // the caller's thread, without a hand-over to the engine's. Not with a
  // callback: it would run inside this call, and a callback that posts the
  // next message could recurse without bound.
  size_t pending = posted.size();
  if (!state->has_callback()) {
    for (size_t i = 0; i < pending;) {
      Status s;
      if (!posted[i].request->Test(&s)) {
        ++i;
        continue;
      }
      state->Complete(c.Named(posted[i], s));
      posted[i] = std::move(posted[--pending]);
    }
  }
  if (pending == 0) return Status::OK();
  bool wake = true;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (size_t i = 0; i < pending; ++i) c.active.push_back(std::move(posted[i]));
    // While a caller polls, the engine's thread checks back within
    // kCallerActive anyway: no wake-up (a context switch) per message.
    wake = c.parked || !c.CallerPolling(kCallerActive);
  }
  if (wake) c.cv.notify_one();
  return Status::OK();
}

bool P2PEngine::Core::Poll(Finished* finished) {
  bool progress = false;
  const auto now = Clock::now();
  for (size_t i = 0; i < active.size();) {
    Pending& p = active[i];
    Status s;
    bool done = p.request->Test(&s);
    if (!done && now > p.deadline) {
      p.request->Abort();
      std::string why = Describe(p) + " did not complete within " + Seconds(op_timeout_s) +
                        " s (HVD_OP_TIMEOUT_SECONDS)";
      const std::string peer = describe ? describe(p.op.peer) : "";
      if (!peer.empty()) why += ": " + peer;
      HVD_LOG(kError) << why;
      s = Status::Timeout(why);
      done = true;
    } else if (done) {
      s = Named(p, s);
    }
    if (!done) {
      ++i;
      continue;
    }
    // Completed by the caller once mu is released: a completion callback
    // may post the next message.
    finished->emplace_back(std::move(p.state), std::move(s));
    p.request.reset();
    active[i] = std::move(active.back());
    active.pop_back();
    progress = true;
  }
  return progress;
}

void P2PEngine::Run() {
  // After the last progress the thread spins, yielding, for kSpin: the
  // next message of a pipeline is usually posted within it. Past it, it
  // sleeps between polls (longer the longer nothing happens: a late peer
  // must not cost a core) or, with nothing pending, until a caller posts.
  // Callers waiting on a handle poll too (HandleState's poller).
  constexpr auto kSpin = std::chrono::microseconds(200);
#ifdef __linux__
  prctl(PR_SET_NAME, "hvd-p2p", 0UL, 0UL, 0UL);
#endif
  Core& c = *core_;
  auto last_progress = Clock::now();
  int64_t sleep_us = 0;
  Finished finished;
  for (;;) {
    bool idle = false;
    {
      std::unique_lock<std::mutex> lock(c.mu);
      if (c.active.empty() && Clock::now() - last_progress > kSpin) {
        c.parked = true;
        c.cv.wait(lock, [&c] { return c.stop || !c.active.empty(); });
        c.parked = false;
        last_progress = Clock::now();
        sleep_us = 0;
      }
      if (c.stop) return;
      if (c.CallerPolling(kCallerActive)) {
        // Leave the messages to the caller; look again in kCallerActive
        // (posts do not wake this wait, only shutdown does).
        c.cv.wait_for(lock, kCallerActive, [&c] { return c.stop; });
        last_progress = Clock::now();  // then spin: the caller may have stopped
        continue;
      }
      if (c.Poll(&finished)) {
        last_progress = Clock::now();
        sleep_us = 0;
      }
      idle = c.active.empty();
    }
    for (auto& f : finished) f.first->Complete(f.second);
    finished.clear();
    if (Clock::now() - last_progress <= kSpin) {
      std::this_thread::yield();
    } else if (!idle) {
      sleep_us = std::min<int64_t>(1000, sleep_us + 10);
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    }
  }
}

}  // namespace hvd
