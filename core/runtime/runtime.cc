#include "core/runtime/runtime.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/backends/registry.h"
#include "core/common/logging.h"
#include "core/common/spin_lock.h"
#include "core/dataplane/build.h"
#include "core/rendezvous/socket_util.h"
#include "core/runtime/set_loop.h"
#include "core/runtime/settings_agreement.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// Under MPI, how long a process that keeps running after a deadline or a
// lost peer lives on before the job is aborted: time to log the error or
// save state, within the "deadline + 5 s" bound on the job's end.
constexpr std::chrono::milliseconds kMpiAbortGrace{1000};

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

// Waits for a loop to end by itself, up to `seconds`.
bool WaitFinished(const SetLoop& loop, double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
  while (!loop.finished() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return loop.finished();
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

// A world communicator of `entry`'s backend.
Status CreateWorldComm(const InitArgs& args, const Config& config, const BackendEntry& entry,
                       std::shared_ptr<Comm>* out) {
  CommInitArgs cargs;
  cargs.config = &config;
  cargs.use_mpi_comm = args.use_mpi_comm;
  cargs.mpi_comm = args.mpi_comm;
  std::unique_ptr<Comm> comm;
  HVD_RETURN_IF_ERROR(entry.create_world(cargs, &comm));
  *out = std::shared_ptr<Comm>(std::move(comm));
  return Status::OK();
}

// The world's CPU-operations communicator: the controller's when both
// backends are the same.
Status CreateDataComm(const InitArgs& args, const Config& config, const BackendEntry& ctrl_entry,
                      const BackendEntry& data_entry, const std::shared_ptr<Comm>& ctrl,
                      std::shared_ptr<Comm>* data) {
  *data = ctrl;
  if (&data_entry == &ctrl_entry) return Status::OK();
  HVD_RETURN_IF_ERROR(CreateWorldComm(args, config, data_entry, data));
  if ((*data)->size() != ctrl->size() || (*data)->rank() != ctrl->rank()) {
    return Status::Invalid("the controller and CPU-operations backends disagree on rank/size");
  }
  return Status::OK();
}

// hvd_wait's spin (Config::wait_spin_us): only where every rank of this
// host can have a core, as the shared-memory barriers; with more ranks
// than cores a yielding waiter would hand a peer's work whole time slices.
std::chrono::nanoseconds WaitSpin(const Config& config, int local_size) {
  if (config.wait_spin_us >= 0) return std::chrono::microseconds(config.wait_spin_us);
  return RanksFitCores(local_size) ? std::chrono::microseconds(1000) : std::chrono::microseconds(0);
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
  HVD_RETURN_IF_ERROR(AllgatherBytes(*comm, config_.launch.host, &hosts_));
  Topology t;
  t.rank = comm->rank();
  t.size = comm->size();
  std::vector<std::string> order;  // hosts in order of their first rank
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < t.size; ++r) {
    if (!by_host.count(hosts_[r])) order.push_back(hosts_[r]);
    by_host[hosts_[r]].push_back(r);
  }
  const auto& mine = by_host[hosts_[t.rank]];
  t.local_size = static_cast<int>(mine.size());
  for (const auto& h : by_host) t.homogeneous = t.homogeneous && h.second.size() == mine.size();
  t.local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), t.rank) - mine.begin());
  // Cross communicator: the ranks with my local rank, one per host.
  t.cross_size = 0;
  for (const auto& h : order) {
    if (static_cast<int>(by_host[h].size()) > t.local_rank) {
      if (h == hosts_[t.rank]) t.cross_rank = t.cross_size;
      ++t.cross_size;
    }
  }
  topo_ = t;
  return Status::OK();
}

Status Runtime::CreateWorld(const InitArgs& args, std::unique_ptr<ProcessSet>* out) {
  const BackendEntry* ctrl_entry = nullptr;
  const BackendEntry* data_entry = nullptr;
  HVD_RETURN_IF_ERROR(ChooseBackends(args, config_, &ctrl_entry, &data_entry));
  auto world = std::make_unique<ProcessSet>();
  HVD_RETURN_IF_ERROR(CreateWorldComm(args, config_, *ctrl_entry, &world->controller_comm));
  // A caller's own communicator and elastic rounds may legitimately hold one rank.
  if (!args.use_mpi_comm && !config_.elastic) {
    HVD_RETURN_IF_ERROR(CheckNotAlone(config_.launch, world->controller_comm->size(),
                                      FindBackend(BackendChoice::kMpi) != nullptr));
  }
  HVD_RETURN_IF_ERROR(ComputeTopology(world->controller_comm.get()));
  // Every rank on one host (not cross_size == 1: with uneven hosts a rank
  // beyond the others' local sizes has no cross peers, but its set does).
  const bool one_host = std::all_of(hosts_.begin(), hosts_.end(),
                                    [this](const std::string& h) { return h == hosts_[0]; });
  if (one_host && !config_.allreduce_chunk_bytes_fixed) {
    config_.allreduce_chunk_bytes = HostLocalChunkBytes();
  }
  // Before anything else collective: a rank set up otherwise would hang it.
  HVD_RETURN_IF_ERROR(CheckRanksShareSettings(*world->controller_comm, config_, data_entry->name));
  HVD_RETURN_IF_ERROR(CreateDataComm(args, config_, *ctrl_entry, *data_entry,
                                     world->controller_comm, &world->data_comm));
  for (int r = 0; r < topo_.size; ++r) world->ranks.push_back(r);
  HVD_RETURN_IF_ERROR(MakeDataPlane(*world, "world"));
  HVD_RETURN_IF_ERROR(OpenChannel(*world, "world"));
  controller_name_ = ctrl_entry->name;
  data_name_ = data_entry->name;
  controller_choice_ = ctrl_entry->choice;
  data_choice_ = data_entry->choice;
  *out = std::move(world);
  return Status::OK();
}

// Where this rank's sockets listen (the control channel's coordinator, the
// cross-host ring): the interface the user named for Gloo (hvdrun
// --network-interface), else an address the others can reach.
std::string Runtime::BindHost() const {
  std::string host;
  if (!config_.listen_iface.empty() &&
      rendezvous::InterfaceAddress(config_.listen_iface, &host).ok()) {
    return host;
  }
  return config_.listen_hostname.empty() ? ReachableAddress(config_.launch.rendezvous)
                                         : config_.listen_hostname;
}

Status Runtime::MakeDataPlane(ProcessSet& ps, const std::string& tag) {
  std::vector<std::string> hosts;
  for (int32_t r : ps.ranks) hosts.push_back(hosts_[static_cast<size_t>(r)]);
  BuildArgs args;
  args.inputs = InputsFor(*ps.data_comm, "process set " + std::to_string(ps.id), std::move(hosts));
  args.tag = tag;
  args.bind_host = BindHost();
  return hvd::BuildDataPlane(config_, args, &ps.data_comm, &ps.plan);
}

Status Runtime::OpenChannel(ProcessSet& ps, const std::string& tag) {
  ControlChannelOptions o;
  o.timeout_s = config_.peer_timeout_seconds;
  o.transport = config_.control_channel;
  // Inside one host MPI's own messages answer sooner: they go through
  // shared memory, and the loop polls while it waits, where a socket adds a
  // kernel round trip and a wake-up (figures: docs/benchmarks.md).
  const auto on_host = [&](int32_t r) { return hosts_[r] == hosts_[ps.ranks[0]]; };
  if (o.transport == ControlChannelChoice::kAuto &&
      std::all_of(ps.ranks.begin(), ps.ranks.end(), on_host)) {
    o.transport = ControlChannelChoice::kBackend;
  }
  o.host = BindHost();
  HVD_RETURN_IF_ERROR(ps.controller_comm->OpenControlChannel(o, &ps.channel));
  HVD_LOG(kInfo) << "control channel (" << tag << "): " << ps.channel->description();
  return Status::OK();
}

void Runtime::StartLoop(ProcessSet& ps) {
  std::vector<std::string> names;
  for (int r : ps.ranks) {
    names.push_back("rank " + std::to_string(r) + " (host " + hosts_[static_cast<size_t>(r)] + ")");
  }
  ps.channel->SetPeerNames(std::move(names));
  ps.loop = std::make_unique<SetLoop>(*this, ps, tuned_);
  ps.loop->Start();
}

Status Runtime::Init(const InitArgs& args) {
  std::lock_guard<std::mutex> lock(init_mu_);
  if (running_) {
    return Status(Code::kAlreadyInitialized,
                  "hvd is already initialized; call hvd_shutdown before initializing again");
  }
  Config cfg;
  HVD_RETURN_IF_ERROR(Config::FromEnvironment(&cfg));
  config_ = cfg;
  SetLogConfig(config_.log_level, config_.log_hide_time);
  std::unique_ptr<ProcessSet> world;
  HVD_RETURN_IF_ERROR(CreateWorld(args, &world));
  SetLogRank(topo_.rank);
  HVD_RETURN_IF_ERROR(Liveness::Start(
      world->controller_comm.get(), config_.launch.rendezvous, hosts_,
      [this](const ProbeQuestion& q) { return DescribeSelf(q); }, &liveness_));
  tuned_.fusion_threshold_bytes = config_.fusion_threshold_bytes;
  tuned_.cycle_time_ms = config_.cycle_time_ms;
  tuned_.allreduce_chunk_bytes = config_.allreduce_chunk_bytes;
  const auto spin = WaitSpin(config_, topo_.local_size);
  HandleState::SetWaitSpin(spin);
  wait_progress_ = config_.wait_progress && spin.count() > 0;  // waits drive only while they spin
  autotuner_.reset();
  if (config_.autotune && topo_.rank == 0) autotuner_ = std::make_unique<Autotuner>(config_, 0);
  if (!config_.timeline_path.empty()) {
    Status ts = timeline_.Start(config_.timeline_path, config_.timeline_mark_cycles, topo_.rank);
    if (!ts.ok()) {
      HVD_LOG(kWarning) << "HVD_TIMELINE: " << ts.message();
    }
  }
  {
    std::lock_guard<std::mutex> nl(names_mu_);
    auto_names_.clear();
  }
  ProcessSet& w = *world;
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    sets_.clear();
    sets_[0] = std::move(world);
    next_set_id_ = 1;
  }
  {
    // The communicator whose Abort() ends an MPI job (job_end.h).
    std::shared_ptr<Comm> mpi;
    if (w.controller_comm->transport() == Transport::kMpi) {
      mpi = w.controller_comm;
    } else if (w.data_comm->transport() == Transport::kMpi) {
      mpi = w.data_comm;
    }
    job_end_.Arm(std::move(mpi), config_.mpi_abort_on_timeout, kMpiAbortGrace, config_.elastic);
  }
  StartFlightRecorder();
  StartP2P(w);
  StartLoop(w);
  if (config_.op_timeout_seconds > 0) {
    // A few looks per deadline, between a quarter second and ten seconds.
    const double period = std::min(10.0, std::max(0.25, config_.op_timeout_seconds / 4));
    watchdog_ =
        std::make_unique<Watchdog>(std::chrono::milliseconds(static_cast<int64_t>(period * 1000)),
                                   [this] { CheckDeadlines(); });
  }
  running_ = true;
  // Registered after the backends so it runs before their own exit hooks
  // (MPI_Finalize): a process that exits without hvd_shutdown stops cleanly.
  // on_exit (glibc) passes the exit status, which a failed job changes.
  static bool registered = [] {
#ifdef __GLIBC__
    return on_exit([](int status, void*) { Runtime::Get().OnProcessExit(status); }, nullptr) == 0;
#else
    return std::atexit([] { Runtime::Get().OnProcessExit(0); }) == 0;
#endif
  }();
  (void)registered;
  HVD_LOG(kDebug) << "initialized: rank " << topo_.rank << "/" << topo_.size << ", local "
                  << topo_.local_rank << "/" << topo_.local_size << ", controller "
                  << controller_name_ << ", cpu operations " << data_name_;
  return Status::OK();
}

void Runtime::StopAll(const Status& why) {
  std::lock_guard<std::mutex> sl(sets_mu_);
  for (auto& kv : sets_) {
    if (kv.second->loop) kv.second->loop->RequestStop(why);
  }
}

void Runtime::OnProcessExit(int status) {
  job_end_.OnExit(status);
  Shutdown();
}

Status Runtime::Shutdown() {
  std::lock_guard<std::mutex> lock(init_mu_);
  if (!running_) return Status::OK();
  job_end_.OnShutdown();  // under MPI after a failure: aborts the job
  watchdog_.reset();
  p2p_.reset();  // fails unfinished messages with kShutDown
  StopAll(Status::OK());
  std::vector<SetLoop*> loops;
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    for (auto& kv : sets_) {
      if (kv.second->loop) loops.push_back(kv.second->loop.get());
    }
  }
  // Shutting down is negotiated (no member may be left inside a
  // collective); a coordinator that does not answer is given up on.
  for (SetLoop* loop : loops) {
    if (!WaitFinished(*loop, config_.peer_timeout_seconds)) {
      HVD_LOG(kError) << "shutdown: the coordinator did not confirm it within "
                      << config_.peer_timeout_seconds << " s; leaving without it";
      loop->Abandon(Status::ShutDown("hvd has been shut down on this rank"));
    }
    loop->Join();
  }
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    sets_.clear();  // frees channels and communicators
  }
  liveness_.reset();
  timeline_.Stop();
  job_end_.Disarm();
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

ProcessSet* Runtime::FindSet(int32_t id) {
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second.get();
}

Status Runtime::FindMemberSet(int32_t id, ProcessSet** out) {
  ProcessSet* ps = FindSet(id);
  if (!ps) {
    return Status::Invalid("unknown process set " + std::to_string(id) +
                           " (never added, or removed)");
  }
  if (!ps->member()) {
    return Status::Invalid("rank " + std::to_string(topo_.rank) +
                           " is not a member of process set " + std::to_string(id));
  }
  *out = ps;
  return Status::OK();
}

Status Runtime::Submit(std::unique_ptr<TensorEntry>* entries, size_t count) {
  if (!running_) return Status::NotInitialized();
  std::lock_guard<std::mutex> sl(sets_mu_);
  const int32_t set = count == 0 ? 0 : entries[0]->request.process_set;
  ProcessSet* ps = nullptr;
  HVD_RETURN_IF_ERROR(FindMemberSet(set, &ps));
  const int set_rank = ps->rank();
  // The enqueue time feeds the deadlines (seconds) and, when tracing, the
  // timeline's QUEUE span (microseconds): the kernel's tick-granular clock
  // is a third of the cost per submission when only the former needs it.
  const auto now = timeline_.active() ? Clock::now() : CoarseNow();
  for (size_t i = 0; i < count; ++i) {
    TensorEntry& e = *entries[i];
    e.request.rank = set_rank;
    e.enqueued = now;
    e.flight_token = flight_.Submit(e.request.name, e.request.type, set, ps->submitted++,
                                    e.request.dtype, e.request.shape, e.bytes, now);
  }
  // Before the queue has it: once there, the loop may complete it.
  if (wait_progress_ && ps->loop && count > 0)
    entries[0]->handle->set_progress(ps->loop->progress());
  const Status s = ps->queue.Add(entries, count);
  if (!s.ok() && flight_.on()) {  // refused: not part of the set's order
    ps->submitted -= static_cast<int64_t>(count);
    for (size_t i = 0; i < count; ++i) flight_.Done(entries[i]->flight_token, s.code(), now);
  }
  return s;
}

Status Runtime::SetInfo(int32_t id, int* rank, int* size) {
  if (!running_) return Status::NotInitialized();
  std::lock_guard<std::mutex> sl(sets_mu_);
  ProcessSet* ps = FindSet(id);
  if (!ps) {
    return Status::Invalid("unknown process set " + std::to_string(id) +
                           " (never added, or removed)");
  }
  *rank = ps->rank();
  *size = ps->size();
  return Status::OK();
}

void Runtime::OnSetFinished(ProcessSet& ps, const Status& final_status) {
  if (ps.id == 0) StopAll(final_status);
}

Status Runtime::AddProcessSet(const std::vector<int32_t>& ranks, int32_t* id) {
#ifdef HVD_HAVE_MPI
  // Each set has its own loop thread, so sets over MPI call it concurrently.
  const bool on_mpi =
      controller_choice_ == BackendChoice::kMpi || data_choice_ == BackendChoice::kMpi;
  if (on_mpi && !MpiThreadsSupported()) {
    return Status::Unsupported(
        "process sets over MPI need MPI_THREAD_MULTIPLE (unset HVD_MPI_THREADS_DISABLE, or "
        "initialise MPI with it before hvd_init)");
  }
#endif
  auto ps = std::make_unique<ProcessSet>();
  ps->id = next_set_id_++;
  *id = ps->id;
  ps->ranks.assign(ranks.begin(), ranks.end());
  ProcessSet* world = sets_.at(0).get();
  if (std::find(ps->ranks.begin(), ps->ranks.end(), topo_.rank) != ps->ranks.end()) {
    const std::string tag = "process_set." + std::to_string(ps->id);
    std::unique_ptr<Comm> c;
    HVD_RETURN_IF_ERROR(world->controller_comm->Split(ps->ranks, tag + ".ctrl", &c));
    ps->controller_comm = std::shared_ptr<Comm>(std::move(c));
    ps->data_comm = ps->controller_comm;
    if (world->data_comm != world->controller_comm) {
      HVD_RETURN_IF_ERROR(world->data_comm->Split(ps->ranks, tag + ".data", &c));
      ps->data_comm = std::shared_ptr<Comm>(std::move(c));
    }
    HVD_RETURN_IF_ERROR(MakeDataPlane(*ps, tag));
    HVD_RETURN_IF_ERROR(OpenChannel(*ps, tag));
    StartLoop(*ps);
  }
  std::lock_guard<std::mutex> sl(sets_mu_);
  sets_[ps->id] = std::move(ps);
  return Status::OK();
}

Status Runtime::RemoveProcessSet(int32_t id) {
  std::unique_ptr<ProcessSet> removed;
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    auto it = sets_.find(id);
    if (id == 0 || it == sets_.end()) {
      return Status::Invalid("cannot remove process set " + std::to_string(id) +
                             (id == 0 ? " (the global set)" : " (unknown id)"));
    }
    removed = std::move(it->second);
    sets_.erase(it);
  }
  if (removed->loop) {
    removed->loop->RequestStop(Status::Invalid("process set " + std::to_string(id) +
                                               " was removed while this operation was pending"));
    removed->loop->Join();
  }
  return Status::OK();
}

Status Runtime::ApplyProcessSetChange(const Response& response, TensorEntry* entry) {
  Status s;
  if (response.type == OpType::kAddProcessSet) {
    int32_t id = -1;
    s = AddProcessSet(response.set_ranks, &id);
    if (entry) entry->handle->result().value = id;
    if (entry) entry->handle->Complete(s);
    return s;  // a failed split leaves the members disagreeing: fatal
  }
  s = RemoveProcessSet(response.set_ranks.empty() ? -1 : response.set_ranks[0]);
  if (entry) entry->handle->Complete(s);
  return Status::OK();
}

}  // namespace hvd
