#include "core/runtime/set_loop.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "core/common/logging.h"
#include "core/ops/op.h"
#include "core/runtime/runtime.h"
#include "core/tensor/wait_totals.h"
#ifdef HVD_HAVE_CUDA
#include "core/gpu/gpu_exec.h"
#endif

namespace hvd {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A burst of submissions ends when none came for this long.
constexpr microseconds kBurstQuiet{10};
// Waiting for a message over shared memory (MPI on one host), right after
// activity the loop only yields (a decision usually follows within
// microseconds). Then it sleeps until a descriptor wakes it or, polling a
// channel that cannot wake it (MPI across hosts, or with a send still
// leaving), in doubling naps up to a cap that grows when the wait is long.
constexpr microseconds kSpin{50};
constexpr microseconds kFirstNap{5};
constexpr microseconds kNapCap{200};
constexpr microseconds kLongNapCap{1000};
constexpr milliseconds kLongWait{20};
// An idle coordinator polling MPI still drains its channel this often, so a
// member's shutdown (or a stall report) is answered without local work.
constexpr milliseconds kIdleTick{100};

// Every rank has submitted these: their waits from now on are for the data.
void MarkStarted(const std::vector<TensorEntry*>& entries) {
  const int64_t now = SteadyNs();
  for (TensorEntry* e : entries) {
    if (e && e->handle) e->handle->MarkStarted(now);
  }
}

bool IsFatal(Code c) {
  return c == Code::kPeerLost || c == Code::kBackend || c == Code::kTimeout;
}

std::string JoinRanks(const std::vector<int32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// The autotuned chunk size, to the set's data Comm.
void SetChunkBytes(Comm& comm, int64_t bytes) {
  CommTuning tuning;
  tuning.allreduce_chunk_bytes = bytes;
  comm.Tune(tuning);
}

}  // namespace

ProcessSet::ProcessSet() = default;
ProcessSet::~ProcessSet() = default;

SetLoop::SetLoop(Runtime& runtime, ProcessSet& ps, const TunedParams& params)
    : runtime_(runtime),
      ps_(ps),
      params_(params),
      negotiator_(runtime.config().cache_capacity, runtime.config().cache_capacity_max()),
      progress_(std::make_shared<LoopProgress>(this)),
      nap_(kFirstNap) {
  if (ps_.rank() == 0) {
    coordinator_ = std::make_unique<Coordinator>(ps_.size(), ps_.id, runtime.config());
    coordinator_->set_timeline(&runtime.timeline());
    coordinator_->set_describe([this](const std::vector<int>& ranks, const std::string& tensor) {
      return runtime_.DescribeRanks(ps_, ranks, tensor);
    });
    if (ps_.id == 0) coordinator_->set_autotuner(runtime.autotuner());
  }
  SetChunkBytes(*ps_.data_comm, params_.allreduce_chunk_bytes);
}

SetLoop::~SetLoop() {
  RequestStop();
  Join();
  progress_->Detach();  // never started
}

void SetLoop::Start() {
  thread_ = std::thread(&SetLoop::Run, this);
}

void SetLoop::RequestStop(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_reason_.ok()) stop_reason_ = why;
  }
  stop_requested_ = true;
  ps_.queue.Wake();
}

void SetLoop::Abandon(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_reason_ = why;
  }
  abandoned_ = true;
  ps_.queue.Wake();
}

void SetLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

SetLoop::Activity SetLoop::activity() const {
  std::lock_guard<std::mutex> lock(mu_);
  Activity a;
  const Response* r = exec_response_;
  if (!r) return a;
  a.executing = true;
  a.what = std::string(OpTypeName(r->type)) + " of '" + r->names[0] + "'" +
           (r->names.size() > 1 ? " (+" + std::to_string(r->names.size() - 1) + " fused)" : "");
  a.since = exec_started_;
  for (const TensorEntry* e : *exec_entries_) {
    if (e) a.since = std::min(a.since, e->enqueued);
  }
  return a;
}

void SetLoop::SetActivity(const Response* r, const std::vector<TensorEntry*>& entries) {
  const auto now = r ? Clock::now() : Clock::time_point();
  std::lock_guard<std::mutex> lock(mu_);
  exec_response_ = r;
  exec_entries_ = r ? &entries : nullptr;
  exec_started_ = now;
  exec_failed_ = false;
}

void SetLoop::FailInFlight(const Status& s) {
  std::vector<std::shared_ptr<HandleState>> handles;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!exec_entries_ || exec_failed_) return;
    exec_failed_ = true;
    for (const TensorEntry* e : *exec_entries_) {
      if (e) handles.push_back(e->handle);
    }
  }
  for (auto& h : handles) h->Complete(s);
}

std::string SetLoop::Describe(const std::string& tensor) const {
  const auto now = Clock::now();
  auto secs = [&](Clock::time_point t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - t).count()) + " s";
  };
  std::string line;
  bool in_flight = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (exec_response_) {
      const auto& n = exec_response_->names;
      in_flight = std::find(n.begin(), n.end(), tensor) != n.end();
    }
  }
  if (const Activity a = activity(); a.executing) {
    line = "executing " + a.what + " for " + secs(a.since);
  }
  if (finished_.load()) line = "its background loop has ended";
  Clock::time_point since;
  if (!tensor.empty() && !in_flight) {
    line += (line.empty() ? "" : "; ") + (ps_.queue.PendingSince(tensor, &since)
                                              ? "has '" + tensor + "' pending for " + secs(since)
                                              : "has not submitted '" + tensor + "'");
  }
  const size_t pending = ps_.queue.PendingCount();
  if (line.empty()) line = pending ? "waiting for a decision" : "idle";
  return line + " (" + std::to_string(pending) + " operations pending)";
}

void SetLoop::Run() {
#ifdef __linux__
  // Naps of a few microseconds should last that long, not the default
  // 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  // `top -H`, perf and /proc name the thread (at most 15 characters).
  const std::string name = "hvd-loop" + (ps_.id ? "-" + std::to_string(ps_.id) : std::string());
  prctl(PR_SET_NAME, name.substr(0, 15).c_str(), 0UL, 0UL, 0UL);
#endif
  Status fatal;
  {
    std::unique_lock<std::mutex> lock(progress_->mu());
    last_activity_ = Clock::now();
    while (!ended_) {
      bool stop = false;
      const Status s = Step(&stop);
      EndIf(s, stop);
      if (!ended_) Wait(lock);
    }
    fatal = end_status_;
  }
  progress_->Detach();
  const Status final_status = FinalStatus(Explain(fatal));
  if (!fatal.ok()) {
    HVD_LOG(kError) << "process set " << ps_.id << ": background loop stopped: " << fatal.message();
  }
  if (final_status.code() == Code::kPeerLost || final_status.code() == Code::kTimeout) {
    runtime_.NoteJobFailure(final_status);
  }
  ps_.queue.Close(final_status);
  finished_ = true;
  runtime_.OnSetFinished(ps_, final_status);
}

void SetLoop::EndIf(const Status& s, bool stop) {
  if (s.ok() && !stop) return;
  ended_ = true;
  end_status_ = s;
}

Progress::Step SetLoop::CallerStep() {
  if (ended_) return Progress::Step::kGone;
  const auto before = last_activity_;
  bool stop = false;
  const Status s = Step(&stop);
  EndIf(s, stop);
  if (ended_) {
    ps_.queue.Wake();  // the loop's thread finishes the set
    return Progress::Step::kGone;
  }
  return last_activity_ != before ? Progress::Step::kDid : Progress::Step::kIdle;
}

Status SetLoop::Step(bool* stop) {
  if (abandoned_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_reason_;
  }
  bool busy = false;
  if (stop_requested_.load() && !stop_reported_) {
    negotiator_.RequestShutdown();
    stop_reported_ = busy = true;
  }
  if (ps_.queue.HasRequests()) {
    GatherBurst();
    busy = true;
  }
  Report report;
  if (negotiator_.TakeReport(&report)) HVD_RETURN_IF_ERROR(Send(report));
  std::vector<Decision> decisions;
  HVD_RETURN_IF_ERROR(ReceiveMessages(&decisions));
  if (coordinator_) HVD_RETURN_IF_ERROR(Coordinate(&decisions));
  for (const Decision& d : decisions) {
    HVD_RETURN_IF_ERROR(ApplyDecision(d, stop));
    if (*stop) break;
  }
  if (busy || !decisions.empty()) {
    last_activity_ = Clock::now();
    nap_ = kFirstNap;
  }
  return Status::OK();
}

void SetLoop::GatherBurst() {
  // While callers are still submitting (a burst of async ops), wait until
  // no request arrived for kBurstQuiet or the cycle time passed, so the
  // burst is negotiated and fused together. Meanwhile look up what has
  // arrived (the response cache): that work then overlaps the submissions
  // instead of following them.
  const auto max_wait = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(params_.cycle_time_ms));
  const auto start = Clock::now();
  auto last_change = start;
  uint64_t seen = ps_.queue.submitted();
  ps_.queue.PopRequests(&popped_);
  negotiator_.Add(popped_);
  // A caller waiting to drive the step ends the burst (and a caller's own
  // step gathers nothing): it submits no more, and is kept from the
  // step's lock meanwhile.
  for (auto now = start;
       now - last_change < kBurstQuiet && now - start < max_wait && !progress_->driven();
       now = Clock::now()) {
    const uint64_t c = ps_.queue.submitted();
    if (c == seen) {
      // Yield rather than spin: the submitting thread may need this core.
      std::this_thread::yield();
      continue;
    }
    seen = c;
    last_change = now;
    ps_.queue.PopRequests(&popped_);
    negotiator_.Add(popped_);
  }
  ps_.queue.PopRequests(&popped_);
  negotiator_.Add(popped_);
}

Status SetLoop::Send(const Report& report) {
  if (coordinator_) return coordinator_->OnReport(0, report);
  return ps_.channel->Send(0, EncodeReport(report));
}

Status SetLoop::ReceiveMessages(std::vector<Decision>* decisions) {
  if (ps_.size() == 1) return Status::OK();
  std::vector<ChannelMessage> msgs;
  HVD_RETURN_IF_ERROR(ps_.channel->Receive(&msgs));
  for (auto& m : msgs) {
    if (m.lost) {
      if (!coordinator_) return Status::PeerLost(m.bytes);
      coordinator_->OnPeerLost(m.from, m.bytes);
      continue;
    }
    if (coordinator_) {
      Report r;
      Status s = DecodeReport(m.bytes, &r);
      if (s.ok()) s = coordinator_->OnReport(m.from, std::move(r));
      if (!s.ok())
        return Status::Internal(s.message() + " (from " + ps_.channel->PeerName(m.from) + ")");
    } else {
      decisions->emplace_back();
      HVD_RETURN_IF_ERROR(DecodeDecision(m.bytes, &decisions->back()));
    }
  }
  if (!msgs.empty()) last_activity_ = Clock::now();
  return Status::OK();
}

Status SetLoop::Coordinate(std::vector<Decision>* decisions) {
  Decision d;
  while (coordinator_->Decide(&d)) {
    if (ps_.size() > 1) {
      const std::string bytes = EncodeDecision(d);
      for (int r = 1; r < ps_.size(); ++r) {
        Status s = ps_.channel->Send(r, bytes);
        if (s.code() == Code::kPeerLost) {
          coordinator_->OnPeerLost(r, s.message());  // announced in the next decision
        } else {
          HVD_RETURN_IF_ERROR(s);
        }
      }
    }
    decisions->push_back(std::move(d));
    d = Decision();
  }
  return Status::OK();
}

Status SetLoop::ApplyDecision(const Decision& d, bool* stop) {
  Applied a;
  HVD_RETURN_IF_ERROR(negotiator_.Apply(d, &a));
  if (!a.runs.empty() || a.repeat) {
    Timeline& tl = runtime_.timeline();
    if (tl.active()) tl.MarkCycleStart();
    const int64_t threshold = params_.fusion_threshold_bytes;
    const int64_t solo = ps_.data_comm->caps().fusion_solo_bytes;
    const auto& fused = a.repeat ? fusion_memo_.Repeat(threshold, ps_.size(), solo)
                                 : fusion_memo_.Fuse(&a.runs, threshold, ps_.size(), solo);
    for (const auto& r : fused) HVD_RETURN_IF_ERROR(Execute(r));
  }
  if (a.params_changed) {
    params_ = a.params;
    SetChunkBytes(*ps_.data_comm, params_.allreduce_chunk_bytes);
  }
  Report report;
  if (negotiator_.TakeReport(&report)) HVD_RETURN_IF_ERROR(Send(report));
  if (!a.lost.ok()) return a.lost;
  if (a.shutdown) {
    stop_ranks_ = a.shutdown_ranks;
    *stop = true;
  }
  return Status::OK();
}

SetLoop::Clock::duration SetLoop::SleepTimeout(Clock::time_point now, bool* napping) const {
  const bool polling = ps_.channel && ps_.channel->needs_polling();
  const bool nap = polling && negotiator_.waiting();
  if (napping) *napping = nap;
  Clock::duration timeout = Clock::duration::max();
  if (nap) {
    timeout = nap_;
  } else if (polling && coordinator_) {
    timeout = kIdleTick;
  }
  return std::min(timeout, UntilCheck(now));
}

SetLoop::Clock::duration SetLoop::UntilCheck(Clock::time_point now) const {
  if (!coordinator_) return Clock::duration::max();
  const auto check = coordinator_->next_check();
  return check == Clock::time_point::max() ? Clock::duration::max() : check - now;
}

void SetLoop::Wait(std::unique_lock<std::mutex>& lock) {
  if (progress_->driven()) return Park(lock);
  const auto now = Clock::now();
  const bool spin = ps_.channel && ps_.channel->spin_before_sleep();
  if (spin && negotiator_.waiting() && now - last_activity_ < kSpin) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
    return;
  }
  bool napping = false;
  const Clock::duration timeout = SleepTimeout(now, &napping);
  if (napping) {
    const auto cap = now - last_activity_ > kLongWait ? kLongNapCap : kNapCap;
    nap_ = std::min<Clock::duration>(nap_ * 2, cap);
  }
  if (ps_.queue.Sleeping(true)) return;
  if (ps_.channel && !ps_.channel->PrepareToSleep()) {
    ps_.queue.Sleeping(false);
    return;
  }
  fds_.clear();
  if (ps_.channel) ps_.channel->PollFds(&fds_);
  Sleep(lock, timeout, fds_);
  if (ps_.channel) ps_.channel->Awake();
  ps_.queue.Sleeping(false);
}

void SetLoop::Park(std::unique_lock<std::mutex>& lock) {
  // The callers' steps receive the channel's messages, so the channel
  // need not wake this thread; only a due check must.
  const Clock::duration timeout = UntilCheck(Clock::now());
  if (!progress_->Park()) return;
  if (!ps_.queue.Sleeping(true)) {
    Sleep(lock, timeout, {});
    ps_.queue.Sleeping(false);
  }
  progress_->Unpark();
}

void SetLoop::Sleep(std::unique_lock<std::mutex>& lock, Clock::duration timeout,
                    const std::vector<ControlChannel::PollFd>& fds) {
  std::vector<pollfd> p;
  p.reserve(fds.size() + 1);
  p.push_back({ps_.queue.event_fd(), POLLIN, 0});
  for (const auto& f : fds) {
    p.push_back({f.fd, static_cast<short>(POLLIN | (f.want_write ? POLLOUT : 0)), 0});
  }
  timespec ts{};
  const bool bounded = timeout != Clock::duration::max();
  const auto now = Clock::now();
  if (bounded) {
    const auto ns =
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
    ts.tv_sec = static_cast<time_t>(ns / 1000000000);
    ts.tv_nsec = static_cast<long>(ns % 1000000000);
  }
  // Callers may step meanwhile; WakeIfLate compares with this plan.
  asleep_until_ = bounded ? now + timeout : Clock::time_point::max();
  lock.unlock();
  ::ppoll(p.data(), p.size(), bounded ? &ts : nullptr, nullptr);
  lock.lock();
  asleep_until_ = Clock::time_point::min();
}

void SetLoop::WakeIfLate() {
  if (asleep_until_ == Clock::time_point::min()) return;  // awake: it plans again
  const auto now = Clock::now();
  const Clock::duration timeout = SleepTimeout(now);
  if (timeout != Clock::duration::max() && now + timeout < asleep_until_) ps_.queue.Wake();
}

// A lost peer seen second-hand (a connection reset by a rank that was
// itself leaving) names the wrong rank, and a backend's timeout names none:
// ask everyone who is really gone or silent.
Status SetLoop::Explain(const Status& fatal) {
  const bool explain = fatal.code() == Code::kPeerLost || fatal.code() == Code::kTimeout;
  if (!explain || abandoned_.load()) return fatal;
  if (fatal.message() == explained_.first.message()) return explained_.second;  // probed already
  const std::string who = runtime_.DescribeGone(ps_);
  explained_ = {fatal, who.empty() ? fatal : Status(fatal.code(), fatal.message() + "; " + who)};
  return explained_.second;
}

bool SetLoop::PastDeadline(const std::vector<TensorEntry*>& entries) const {
  const double limit = runtime_.config().op_timeout_seconds;
  if (limit <= 0) return false;
  const auto now = Clock::now();
  for (const auto* e : entries) {
    if (e && std::chrono::duration<double>(now - e->enqueued).count() >= limit - 1.0) return true;
  }
  return false;
}

Status SetLoop::FinalStatus(const Status& fatal) const {
  {
    // The watchdog's verdict wins over the error it provoked by aborting.
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned_.load() && !stop_reason_.ok()) return stop_reason_;
  }
  if (!fatal.ok()) return fatal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_reason_.ok()) return stop_reason_;
  }
  std::vector<int32_t> others;  // world ranks, as users know them
  for (int32_t r : stop_ranks_) {
    if (r != ps_.rank() && r >= 0 && r < ps_.size()) others.push_back(ps_.ranks[r]);
  }
  if (stop_reported_ || others.empty()) {
    return Status::ShutDown("hvd has been shut down on this rank");
  }
  Status s = Status::ShutDown(
      "hvd was shut down by rank" + std::string(others.size() > 1 ? "s " : " ") +
      JoinRanks(others) +
      " (hvd_shutdown called or the process exiting there); this rank's pending and later "
      "operations cannot run");
  // Only news when it costs this rank something: a set removed, or a job
  // ending, with nothing pending here is the normal way out.
  if (ps_.queue.PendingCount() > 0) {
    HVD_LOG(kWarning) << s.message();
  }
  return s;
}

Status SetLoop::RunCollective(const Response& response, std::vector<TensorEntry*>& entries) {
  Timeline& timeline = runtime_.timeline();
  ExecContext ctx;
  ctx.comm = ps_.data_comm.get();
  ctx.fusion = &ps_.fusion;
  ctx.set_id = ps_.id;
  const bool traced = timeline.active();
  if (traced) {
    ctx.timeline = &timeline;
    for (auto* e : entries) {
      if (!e) continue;
      timeline.OpStart(e->request.name, response.type);
      timeline.ActivityStart(e->request.name, "QUEUE", e->enqueued);
      timeline.ActivityEnd(e->request.name);
    }
  }
  // The watchdog sees pointers to response and entries: clear them however
  // the call ends.
  struct InFlight {
    SetLoop* loop;
    ~InFlight() { loop->SetActivity(nullptr, {}); }
  };
  SetActivity(&response, entries);
  if (FlightRecorder& flight = runtime_.flight(); flight.on()) {
    const auto now = FlightRecorder::Now();
    for (auto* e : entries) {
      if (e) flight.Mark(e->flight_token, FlightRecorder::kExecuting, now);
    }
  }
  Status s;
  {
    const InFlight in_flight{this};
    const Executor exec = FindExecutor(response);
    if (!exec) {
      s = Status::Unsupported(std::string("no executor for ") + OpTypeName(response.type));
#ifdef HVD_HAVE_CUDA
    } else if (response.device.kind == DeviceKind::kCUDA) {
      // Picks hvd's stream, the GPU communicator and device memory ops.
      s = ExecuteOnGpu(ps_.Gpu(runtime_.config()), response, entries, ctx, exec);
#endif
    } else {
      s = exec(ctx, response, entries);
    }
  }
  if (traced) {
    for (auto* e : entries) {
      if (e) timeline.OpEnd(e->request.name, e->request.dtype, e->request.shape);
    }
  }
  return s;
}

Status SetLoop::Execute(const Response& response) {
  const size_t n = response.names.size();
  std::vector<TensorEntry*> entries(n, nullptr);
  const bool missing = ps_.queue.Take(response.names, entries.data()) < n;
  // The taken entries go back to the queue's pool however this returns.
  struct Recycle {
    TensorQueue& queue;
    const std::vector<TensorEntry*>& entries;
    ~Recycle() { queue.Recycle(entries); }
  } const recycle{ps_.queue, entries};
  MarkStarted(entries);
  FlightRecorder& flight = runtime_.flight();
  if (flight.on()) {
    const auto now = FlightRecorder::Now();
    for (auto* e : entries) {
      if (e) flight.Mark(e->flight_token, FlightRecorder::kNegotiated, now);
    }
  }
  auto record_done = [&](const Status& s) {
    if (!flight.on()) return;
    const auto now = FlightRecorder::Now();
    for (auto* e : entries) {
      if (e) flight.Done(e->flight_token, s.code(), now);
    }
  };
  auto complete = [&](const Status& s) {
    record_done(s);
    std::vector<HandleState*> states;
    states.reserve(n);
    for (auto* e : entries) {
      if (e) states.push_back(e->handle.get());
    }
    HandleState::CompleteAll(states, s);
  };
  if (response.error_code != Code::kOk) {
    const Status err(response.error_code, response.error);
    // The coordinator's deadline (a rank never submitted it) ends the job;
    // HVD_STALL_SHUTDOWN_TIME_SECONDS, shorter, fails only the operation.
    if (err.code() == Code::kTimeout && PastDeadline(entries)) {
      record_done(err);  // the flight record shows how it ended
      runtime_.NoteJobFailure(err);
    }
    complete(err);
    return Status::OK();
  }
  switch (response.type) {
    case OpType::kJoin:
      for (auto* e : entries) {
        if (e) e->handle->result().value = response.last_joined;
      }
      complete(Status::OK());
      return Status::OK();
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:
      return runtime_.ApplyProcessSetChange(response, entries[0]);
    default:
      break;
  }
  const bool joined = std::find(response.joined_ranks.begin(), response.joined_ranks.end(),
                                ps_.rank()) != response.joined_ranks.end();
  if (missing && !(response.type == OpType::kAllreduce && joined)) {
    // Every rank agreed to run this; without the entry this rank cannot take
    // part, and the others would wait forever.
    Status s = Status::Internal("no local tensor for negotiated " +
                                std::string(OpTypeName(response.type)) + " of '" +
                                response.names[0] + "'");
    complete(s);
    return s;
  }
  Status s = RunCollective(response, entries);
  if (IsFatal(s.code())) s = Explain(s);  // before the callers see it
  if (s.code() == Code::kPeerLost || s.code() == Code::kTimeout) {
    record_done(s);
    runtime_.NoteJobFailure(s);
  }
  complete(s);
  return IsFatal(s.code()) ? s : Status::OK();
}

}  // namespace hvd
