#include "core/runtime/p2p_engine.h"

#include <algorithm>

#include "core/common/logging.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

std::string Seconds(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

P2PEngine::P2PEngine(std::unique_ptr<Comm> comm, std::vector<std::string> names,
                     double op_timeout_s, std::function<std::string(int)> describe)
    : comm_(std::move(comm)),
      names_(std::move(names)),
      op_timeout_s_(op_timeout_s),
      describe_(std::move(describe)),
      thread_(&P2PEngine::Run, this) {}

P2PEngine::~P2PEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string P2PEngine::Describe(const Pending& p) const {
  const std::string who = p.op.peer >= 0 && p.op.peer < static_cast<int>(names_.size())
                              ? names_[static_cast<size_t>(p.op.peer)]
                              : "rank " + std::to_string(p.op.peer);
  std::string s = std::string(p.fn) + (p.op.recv ? " from " : " to ") + who;
  if (p.op.set != 0) {
    s += " (rank " + std::to_string(p.op.set_peer) + " of process set " + std::to_string(p.op.set) +
         ")";
  }
  return s + ", tag " + std::to_string(p.op.tag) + " (" + std::to_string(p.op.bytes) + " bytes)";
}

Status P2PEngine::Named(const Pending& p, const Status& s) const {
  if (s.ok()) return s;
  return Status(s.code(), Describe(p) + ": " + s.message());
}

Status P2PEngine::Submit(const char* fn, const std::vector<P2POp>& ops,
                         const std::shared_ptr<HandleState>& state) {
  const auto deadline = op_timeout_s_ > 0
                            ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(op_timeout_s_))
                            : Clock::time_point::max();
  std::vector<Pending> posted;
  posted.reserve(ops.size());
  Status failed;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    for (const P2POp& op : ops) {
      Pending p{nullptr, state, op, fn, deadline};
      Status s =
          op.recv
              ? comm_->Irecv(op.buf, op.bytes, op.peer, P2PStreamTag(op.set, op.tag), &p.request)
              : comm_->Isend(op.buf, op.bytes, op.peer, P2PStreamTag(op.set, op.tag), &p.request);
      if (!s.ok()) {
        failed = Named(p, s);
        break;
      }
      posted.push_back(std::move(p));
    }
  }
  if (!failed.ok() && posted.empty()) return failed;
  for (size_t i = posted.size(); i < ops.size(); ++i) state->Complete(failed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& p : posted) inbox_.push_back(std::move(p));
    has_inbox_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
  return Status::OK();
}

void P2PEngine::Run() {
  // After the last progress (a message completed or arrived from a caller)
  // the thread spins, yielding, for kSpin: a reply in a ping-pong or the
  // next message of a pipeline is usually posted within it, and is then
  // picked up without a wake-up. Past it, it sleeps between polls (longer
  // the longer nothing happens: a late peer must not cost a core) or, with
  // nothing pending, until a caller posts.
  constexpr auto kSpin = std::chrono::microseconds(200);
  std::vector<Pending> active;
  auto last_progress = Clock::now();
  int64_t sleep_us = 0;
  for (;;) {
    if (has_inbox_.load(std::memory_order_acquire) || active.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      if (active.empty() && inbox_.empty() && Clock::now() - last_progress > kSpin) {
        cv_.wait(lock, [this] { return stop_ || !inbox_.empty(); });
      }
      if (stop_) break;
      if (!inbox_.empty()) {
        for (auto& p : inbox_) active.push_back(std::move(p));
        inbox_.clear();
        has_inbox_.store(false, std::memory_order_relaxed);
        last_progress = Clock::now();
        sleep_us = 0;
      }
    }
    bool progress = false;
    const auto now = Clock::now();
    for (size_t i = 0; i < active.size();) {
      Pending& p = active[i];
      Status s;
      bool done = p.request->Test(&s);
      if (!done && now > p.deadline) {
        p.request->Abort();
        std::string why = Describe(p) + " did not complete within " + Seconds(op_timeout_s_) +
                          " s (HVD_OP_TIMEOUT_SECONDS)";
        const std::string peer = describe_ ? describe_(p.op.peer) : "";
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
      p.state->Complete(s);
      active[i] = std::move(active.back());
      active.pop_back();
      progress = true;
    }
    if (progress) {
      last_progress = Clock::now();
      sleep_us = 0;
    } else if (Clock::now() - last_progress <= kSpin) {
      std::this_thread::yield();
    } else if (!active.empty()) {
      sleep_us = std::min<int64_t>(1000, sleep_us + 10);
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    }
  }
  // Shut down: what is still pending fails.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : inbox_) active.push_back(std::move(p));
  inbox_.clear();
  for (auto& p : active) {
    p.request->Abort();
    p.state->Complete(Status::ShutDown(Describe(p) + ": hvd was shut down before it completed"));
  }
}

}  // namespace hvd
