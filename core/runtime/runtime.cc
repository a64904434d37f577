#include "core/runtime/runtime.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#include "core/backends/registry.h"
#include "core/common/logging.h"
#include "core/coordination/fusion.h"
#include "core/observability/autotune/autotuner.h"
#include "core/ops/op.h"
#ifdef HVD_HAVE_CUDA
#include "core/gpu/gpu_exec.h"
#endif

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// CLOCK_MONOTONIC at tick resolution: the same time base as steady_clock.
Clock::time_point CoarseNow() {
#ifdef CLOCK_MONOTONIC_COARSE
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) {
    return Clock::time_point(std::chrono::seconds(ts.tv_sec) +
                             std::chrono::nanoseconds(ts.tv_nsec));
  }
#endif
  return Clock::now();
}

bool IsFatal(Code c) {
  return c == Code::kPeerLost || c == Code::kBackend || c == Code::kTimeout;
}

std::string JoinRanks(const std::vector<int32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// The controller's and the CPU operations' backends: init options first,
// then HVD_CONTROLLER / HVD_CPU_OPERATIONS; AUTO picks the backend whose
// launcher started the job, else the first built.
Status ChooseBackends(const InitArgs& args, const Config& config, const BackendEntry** ctrl,
                      const BackendEntry** data) {
  BackendChoice ctrl_choice =
      args.controller != BackendChoice::kAuto ? args.controller : config.controller;
  if (args.use_mpi_comm) {
    if (ctrl_choice == BackendChoice::kGloo) {
      return Status::Invalid(
          "running on an MPI communicator needs the MPI controller, but Gloo was requested");
    }
    ctrl_choice = BackendChoice::kMpi;
  }
  *ctrl = nullptr;
  if (ctrl_choice == BackendChoice::kAuto) {
    for (const auto& e : Backends()) {
      if (e.launched_by_env(config.launch)) {
        *ctrl = &e;
        break;
      }
    }
    if (!*ctrl && !Backends().empty()) *ctrl = &Backends().front();
  } else {
    *ctrl = FindBackend(ctrl_choice);
  }
  if (!*ctrl) {
    return Status::Unsupported(
        std::string("the requested controller backend is not built into this libhvd ") +
        "(see hvdrun --check-build)");
  }
  BackendChoice data_choice =
      args.cpu_operations != BackendChoice::kAuto ? args.cpu_operations : config.cpu_operations;
  *data = data_choice == BackendChoice::kAuto ? *ctrl : FindBackend(data_choice);
  if (!*data) {
    return Status::Unsupported(
        "the requested CPU operations backend is not built into this libhvd");
  }
  return Status::OK();
}

// The world's communicators; one shared Comm when both backends are the same.
Status CreateComms(const InitArgs& args, const Config& config, const BackendEntry& ctrl_entry,
                   const BackendEntry& data_entry, std::shared_ptr<Comm>* ctrl,
                   std::shared_ptr<Comm>* data) {
  CommInitArgs cargs;
  cargs.config = &config;
  cargs.use_mpi_comm = args.use_mpi_comm;
  cargs.mpi_comm = args.mpi_comm;
  std::unique_ptr<Comm> ctrl_comm, data_comm;
  HVD_RETURN_IF_ERROR(ctrl_entry.create_world(cargs, &ctrl_comm));
  *ctrl = std::shared_ptr<Comm>(std::move(ctrl_comm));
  *data = *ctrl;
  if (&data_entry == &ctrl_entry) return Status::OK();
  HVD_RETURN_IF_ERROR(data_entry.create_world(cargs, &data_comm));
  *data = std::shared_ptr<Comm>(std::move(data_comm));
  if ((*data)->size() != (*ctrl)->size() || (*data)->rank() != (*ctrl)->rank()) {
    return Status::Invalid("the controller and CPU-operations backends disagree on rank/size");
  }
  return Status::OK();
}

}  // namespace

Runtime& Runtime::Get() {
  static Runtime runtime;
  return runtime;
}

bool Runtime::initialized() {
  return running_.load();
}

std::string Runtime::AutoName(OpType type, int32_t set) {
  std::lock_guard<std::mutex> lock(names_mu_);
  int64_t n = auto_names_[{static_cast<int>(type), set}]++;
  return std::string(OpTypeName(type)) + ".noname." + std::to_string(n) +
         (set ? ".set" + std::to_string(set) : "");
}

Status Runtime::ComputeTopology(Comm* comm) {
  std::vector<std::string> hosts;
  HVD_RETURN_IF_ERROR(comm->AllgatherBytes(config_.launch.host, &hosts));
  Topology t;
  t.rank = comm->rank();
  t.size = comm->size();
  std::vector<std::string> order;  // hosts in order of their first rank
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < t.size; ++r) {
    if (!by_host.count(hosts[r])) order.push_back(hosts[r]);
    by_host[hosts[r]].push_back(r);
  }
  const auto& mine = by_host[hosts[t.rank]];
  t.local_size = static_cast<int>(mine.size());
  t.local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), t.rank) - mine.begin());
  // Cross communicator: the ranks with my local rank, one per host.
  t.cross_size = 0;
  for (const auto& h : order) {
    if (static_cast<int>(by_host[h].size()) > t.local_rank) {
      if (h == hosts[t.rank]) t.cross_rank = t.cross_size;
      ++t.cross_size;
    }
  }
  topo_ = t;
  return Status::OK();
}

Status Runtime::Init(const InitArgs& args) {
  std::lock_guard<std::mutex> lock(init_mu_);
  if (running_) {
    return Status(Code::kAlreadyInitialized, "hvd is already initialized");
  }
  if (thread_.joinable()) thread_.join();  // a loop that ended on its own
  Config cfg;
  HVD_RETURN_IF_ERROR(Config::FromEnvironment(&cfg));
  config_ = cfg;
  SetLogConfig(config_.log_level, config_.log_hide_time);

  const BackendEntry* ctrl_entry = nullptr;
  const BackendEntry* data_entry = nullptr;
  HVD_RETURN_IF_ERROR(ChooseBackends(args, config_, &ctrl_entry, &data_entry));
  std::shared_ptr<Comm> ctrl, data;
  HVD_RETURN_IF_ERROR(CreateComms(args, config_, *ctrl_entry, *data_entry, &ctrl, &data));
  HVD_RETURN_IF_ERROR(ComputeTopology(ctrl.get()));
  SetLogRank(topo_.rank);
  controller_name_ = ctrl_entry->name;
  data_name_ = data_entry->name;

  auto world = std::make_unique<ProcessSet>();
  world->id = 0;
  for (int r = 0; r < topo_.size; ++r) world->ranks.push_back(r);
  world->controller_comm = ctrl;
  world->data_comm = data;
  world->controller = std::make_unique<Controller>(ctrl.get(), config_, 0);
  world->controller->set_timeline(&timeline_);
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    sets_.clear();
    sets_[0] = std::move(world);
    next_set_id_ = 1;
  }
  {
    std::lock_guard<std::mutex> nl(names_mu_);
    auto_names_.clear();
  }
  shutdown_requested_ = false;
  queue_.Reopen();
  if (!config_.timeline_path.empty()) {
    Status ts = timeline_.Start(config_.timeline_path, config_.timeline_mark_cycles, topo_.rank);
    if (!ts.ok()) {
      HVD_LOG(kWarning) << "HVD_TIMELINE: " << ts.message();
    }
  }
  tuned_.fusion_threshold_bytes = config_.fusion_threshold_bytes;
  tuned_.cycle_time_ms = config_.cycle_time_ms;
  tuned_.allreduce_chunk_bytes = config_.allreduce_chunk_bytes;
  autotuner_.reset();
  if (config_.autotune) autotuner_ = std::make_unique<Autotuner>(config_, topo_.rank);
  thread_ = std::thread(&Runtime::Loop, this);
  running_ = true;
  // Registered after the backends so it runs before their own exit hooks
  // (MPI_Finalize): a process that exits without hvd_shutdown stops cleanly.
  static bool registered = [] { return std::atexit([] { Runtime::Get().Shutdown(); }) == 0; }();
  (void)registered;
  HVD_LOG(kDebug) << "initialized: rank " << topo_.rank << "/" << topo_.size << ", local "
                  << topo_.local_rank << "/" << topo_.local_size << ", controller "
                  << controller_name_ << ", cpu operations " << data_name_;
  return Status::OK();
}

Status Runtime::Shutdown() {
  std::lock_guard<std::mutex> lock(init_mu_);
  if (!running_ && !thread_.joinable()) return Status::OK();
  shutdown_requested_ = true;
  queue_.Wake();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    sets_.clear();  // frees communicators
  }
  timeline_.Stop();
  running_ = false;
  return Status::OK();
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  if (!running_) return Status::NotInitialized();
  if (path.empty()) return Status::Invalid("the timeline path is empty");
  return timeline_.Start(path, mark_cycles, topo_.rank);
}

Status Runtime::StopTimeline() {
  if (!running_) return Status::NotInitialized();
  timeline_.Stop();
  return Status::OK();
}

Status Runtime::Submit(TensorEntry* entries, size_t count) {
  if (!running_) return Status::NotInitialized();
  std::lock_guard<std::mutex> sl(sets_mu_);
  const int32_t set = count == 0 ? 0 : entries[0].request.process_set;
  auto it = sets_.find(set);
  if (it == sets_.end())
    return Status::Invalid("unknown process set " + std::to_string(set) +
                           " (never added, or removed)");
  if (!it->second->member()) {
    return Status::Invalid("rank " + std::to_string(topo_.rank) +
                           " is not a member of process set " + std::to_string(set));
  }
  const int set_rank = it->second->rank();
  // The enqueue time feeds the stall inspector (seconds) and, when tracing,
  // the timeline's QUEUE span (microseconds): the kernel's tick-granular
  // clock is a third of the cost per submission when only the former needs it.
  const auto now = timeline_.active() ? Clock::now() : CoarseNow();
  for (size_t i = 0; i < count; ++i) {
    entries[i].request.rank = set_rank;
    entries[i].enqueued = now;
  }
  return queue_.Add(entries, count);
}

Status Runtime::SetInfo(int32_t id, int* rank, int* size) {
  if (!running_) return Status::NotInitialized();
  std::lock_guard<std::mutex> sl(sets_mu_);
  auto it = sets_.find(id);
  if (it == sets_.end())
    return Status::Invalid("unknown process set " + std::to_string(id) +
                           " (never added, or removed)");
  *rank = it->second->rank();
  *size = it->second->size();
  return Status::OK();
}

Clock::duration Runtime::CycleDuration() const {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(tuned_.cycle_time_ms));
}

void Runtime::Loop() {
#ifdef __linux__
  // Sleeps of a few microseconds (waiting for a peer, for a burst of
  // submissions to end) should last that long, not the default 50 us slack.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  auto last = Clock::now() - CycleDuration();
  Status fatal;
  std::vector<int32_t> shutdown_ranks;
  bool stop = false;
  while (!stop) {
    queue_.WaitForWork(last + CycleDuration());
    if (queue_.HasRequests()) {
      queue_.WaitForBurstEnd(std::chrono::microseconds(10), CycleDuration());
    }
    last = Clock::now();
    if (timeline_.active()) timeline_.MarkCycleStart();
    const bool shutdown = shutdown_requested_.load();
    std::vector<int32_t> ids;
    {
      std::lock_guard<std::mutex> sl(sets_mu_);
      for (const auto& kv : sets_) {
        if (kv.second->member()) ids.push_back(kv.first);
      }
    }
    for (int32_t id : ids) {
      ProcessSet* ps = nullptr;
      {
        std::lock_guard<std::mutex> sl(sets_mu_);
        auto it = sets_.find(id);
        if (it == sets_.end()) continue;  // removed during this pass
        ps = it->second.get();
      }
      Status s = CycleSet(*ps, shutdown && id == 0, &stop, &shutdown_ranks);
      if (!s.ok()) {
        fatal = s;
        stop = true;
      }
      if (stop) break;
    }
  }
  Status final_status = fatal;
  if (final_status.ok()) {
    std::vector<int32_t> others;
    for (int32_t r : shutdown_ranks) {
      if (r != topo_.rank) others.push_back(r);
    }
    if (shutdown_requested_ || others.empty()) {
      final_status = Status::ShutDown("hvd has been shut down (hvd_shutdown) on this rank");
    } else {
      final_status = Status::ShutDown(
          "hvd was shut down by rank" + std::string(others.size() > 1 ? "s " : " ") +
          JoinRanks(others) +
          " (hvd_shutdown called or the process exiting there); this rank's pending and later "
          "operations cannot run");
      HVD_LOG(kWarning) << final_status.message();
    }
  } else {
    HVD_LOG(kError) << "background loop stopped: " << final_status.message();
  }
  loop_fatal_ = Status::OK();
  queue_.Close(final_status);
}

Status Runtime::CycleSet(ProcessSet& ps, bool shutdown, bool* stop,
                         std::vector<int32_t>* shutdown_ranks) {
  CycleOutput out;
  HVD_RETURN_IF_ERROR(ps.controller->RunCycle(queue_.PopRequests(ps.id), shutdown, &out));
  auto fused = FuseResponses(out.responses, tuned_.fusion_threshold_bytes, ps.size(),
                             ps.data_comm->fusion_solo_bytes());
  int64_t bytes = 0;
  for (const auto& r : fused) {
    if (r.error_code == Code::kOk) bytes += ResponseBytes(r, ps.size());
    Execute(ps, r);
    HVD_RETURN_IF_ERROR(loop_fatal_);
  }
  if (out.shutdown) {
    *shutdown_ranks = std::move(out.shutdown_ranks);
    *stop = true;
    return Status::OK();
  }
  // Autotune steps on the world set: its cycles and bytes are identical on
  // every rank, so all ranks reach each sample boundary in the same cycle.
  if (ps.id == 0 && autotuner_ && autotuner_->Record(bytes)) {
    HVD_RETURN_IF_ERROR(autotuner_->Sync(ps.controller_comm.get()));
    ApplyTuned(autotuner_->params());
  }
  return Status::OK();
}

void Runtime::ApplyTuned(const TunedParams& p) {
  tuned_ = p;
  std::lock_guard<std::mutex> sl(sets_mu_);
  for (auto& kv : sets_) {
    if (kv.second->data_comm) kv.second->data_comm->SetAllreduceChunkBytes(p.allreduce_chunk_bytes);
  }
}

void Runtime::Execute(ProcessSet& ps, const Response& response) {
  const size_t n = response.names.size();
  std::vector<TensorQueue::Taken> taken(n);
  std::vector<TensorEntry*> entries(n, nullptr);
  const bool missing = queue_.Take(ps.id, response.names, taken.data(), entries.data()) < n;
  auto complete = [&](const Status& s) {
    std::vector<HandleState*> states;
    states.reserve(n);
    for (auto* e : entries) {
      if (e) states.push_back(e->handle.get());
    }
    HandleState::CompleteAll(states, s);
  };
  if (response.error_code != Code::kOk) {
    complete(Status(response.error_code, response.error));
    return;
  }
  switch (response.type) {
    case OpType::kJoin:
      for (auto* e : entries) {
        if (e) e->handle->result().value = response.last_joined;
      }
      complete(Status::OK());
      return;
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:
      ApplyProcessSetChange(response, entries[0]);
      return;
    default:
      break;
  }
  const bool joined = std::find(response.joined_ranks.begin(), response.joined_ranks.end(),
                                ps.rank()) != response.joined_ranks.end();
  if (missing && !(response.type == OpType::kAllreduce && joined)) {
    // Every rank agreed to run this; without the entry this rank cannot take
    // part, and the others would wait forever.
    loop_fatal_ = Status::Internal("no local tensor for negotiated " +
                                   std::string(OpTypeName(response.type)) + " of '" +
                                   response.names[0] + "'");
    complete(loop_fatal_);
    return;
  }
  Executor exec = FindExecutor(response.type);
  ExecContext ctx;
  ctx.comm = ps.data_comm.get();
  ctx.fusion = &ps.fusion;
  ctx.set_id = ps.id;
  const bool traced = timeline_.active();
  if (traced) {
    ctx.timeline = &timeline_;
    for (auto* e : entries) {
      if (!e) continue;
      timeline_.OpStart(e->request.name, response.type);
      timeline_.ActivityStart(e->request.name, "QUEUE", e->enqueued);
      timeline_.ActivityEnd(e->request.name);
    }
  }
  Status s;
  if (!exec) {
    s = Status::Unsupported(std::string("no executor for ") + OpTypeName(response.type));
#ifdef HVD_HAVE_CUDA
  } else if (response.device.kind == DeviceKind::kCUDA) {
    // Picks hvd's stream, the GPU communicator and device memory ops.
    s = ExecuteOnGpu(ps.Gpu(config_), response, entries, ctx, exec);
#endif
  } else {
    s = exec(ctx, response, entries);
  }
  if (traced) {
    for (auto* e : entries) {
      if (e) timeline_.OpEnd(e->request.name, e->request.dtype, e->request.shape);
    }
  }
  complete(s);
  if (IsFatal(s.code())) loop_fatal_ = s;
}

void Runtime::ApplyProcessSetChange(const Response& response, TensorEntry* entry) {
  Status s;
  if (response.type == OpType::kAddProcessSet) {
    auto ps = std::make_unique<ProcessSet>();
    ps->id = next_set_id_++;
    ps->ranks.assign(response.set_ranks.begin(), response.set_ranks.end());
    ProcessSet* world = sets_.at(0).get();
    const bool member =
        std::find(ps->ranks.begin(), ps->ranks.end(), topo_.rank) != ps->ranks.end();
    if (member) {
      const std::string tag = "process_set." + std::to_string(ps->id);
      std::unique_ptr<Comm> c;
      s = world->controller_comm->Split(ps->ranks, tag + ".ctrl", &c);
      if (s.ok()) {
        ps->controller_comm = std::shared_ptr<Comm>(std::move(c));
        if (world->data_comm == world->controller_comm) {
          ps->data_comm = ps->controller_comm;
        } else {
          s = world->data_comm->Split(ps->ranks, tag + ".data", &c);
          ps->data_comm = std::shared_ptr<Comm>(std::move(c));
        }
      }
      if (s.ok()) {
        ps->controller = std::make_unique<Controller>(ps->controller_comm.get(), config_, ps->id);
        ps->controller->set_timeline(&timeline_);
      }
    }
    if (s.ok()) {
      if (entry) entry->handle->result().value = ps->id;
      std::lock_guard<std::mutex> sl(sets_mu_);
      sets_[ps->id] = std::move(ps);
    } else {
      loop_fatal_ = s;
    }
  } else {
    const int32_t id = response.set_ranks.empty() ? -1 : response.set_ranks[0];
    std::unique_ptr<ProcessSet> removed;
    {
      std::lock_guard<std::mutex> sl(sets_mu_);
      auto it = sets_.find(id);
      if (id == 0 || it == sets_.end()) {
        s = Status::Invalid("cannot remove process set " + std::to_string(id) +
                            (id == 0 ? " (the global set)" : " (unknown id)"));
      } else {
        removed = std::move(it->second);
        sets_.erase(it);
      }
    }
    if (removed) {
      queue_.FailSet(id, Status::Invalid("process set " + std::to_string(id) +
                                         " was removed while this operation was pending"));
    }
  }
  if (entry) entry->handle->Complete(s);
}

}  // namespace hvd
