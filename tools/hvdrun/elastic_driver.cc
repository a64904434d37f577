#include "tools/hvdrun/elastic_driver.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "core/rendezvous/elastic_keys.h"
#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/child_io.h"
#include "tools/hvdrun/elastic_discovery.h"
#include "tools/hvdrun/elastic_plan.h"
#include "tools/hvdrun/net.h"

namespace hvd {
namespace run {
namespace {

using rendezvous::Deadline;

constexpr double kDiscoveryIntervalSeconds = 1.0;
constexpr double kDiscoveryTimeoutSeconds = 10.0;
// One failure may be the program's or the machine's transient trouble; a
// host whose workers fail twice is taken out for the cool-down.
constexpr int kFailuresBeforeBlacklist = 2;
// A worker asks for a new round when its collectives failed. Usually a
// worker died and the driver publishes that round itself within one tick;
// only when nothing changed after this long is a same-members round needed.
constexpr double kResetGraceSeconds = 1.0;
constexpr double kDrainSeconds = 2.0;
constexpr int kTickMs = 100;
// Workers wait this much longer than the driver for a round, so the
// driver's message about a failed job comes first.
constexpr double kWorkerTimeoutSlackSeconds = 60.0;

struct Worker : ChildWithOutput {
  Worker(int id, std::string host) : ChildWithOutput(id), id(id), host(std::move(host)) {}
  int id;
  std::string host;
  bool exited = false;
  bool removed = false;  // stopped by the driver: its exit is not a failure
  // Started after the first round: joins a round only once it waits for one
  // (its framework imported), so the survivors never wait for it to start.
  bool ready = true;
  int64_t heartbeat = 0;  // the last value seen in its heartbeat key
  Deadline silent_until = Deadline::Never();
};

struct HostHealth {
  int failures = 0;
  Deadline blacklisted_until = Deadline::Never();
  bool blacklisted() const { return !blacklisted_until.never() && !blacklisted_until.Expired(); }
};

bool IsRankSpecific(const std::string& name) {
  static const std::set<std::string> names = {"HVD_RANK",       "HVD_SIZE",       "HVD_LOCAL_RANK",
                                              "HVD_LOCAL_SIZE", "HVD_CROSS_RANK", "HVD_CROSS_SIZE"};
  return names.count(name) > 0;
}

class Driver {
 public:
  explicit Driver(const ElasticJob& job) : job_(job), opt_(job.options) {}
  int Run();

 private:
  void Reap();
  void OnExit(Worker* w);
  void Discover();
  void RemoveWorkersOfVanishedHosts();
  void SpawnWorkers();
  void Spawn(const std::string& host);
  void UpdateRound();
  void CheckReadiness();
  void StopNonMembers();
  void CheckHeartbeats();
  bool RoundFullyJoined();
  std::vector<LiveWorker> Eligible() const;
  void CheckResetRequests();
  void Publish(const std::vector<LiveWorker>& live);
  void Stop(int code, const std::string& why);
  void SignalAll(int sig);
  void Failure(const std::string& host);

  const ElasticJob& job_;
  const Options& opt_;
  std::unique_ptr<KVClient> client_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<std::string, HostHealth> health_;
  std::vector<HostSlots> hosts_;
  std::string discovery_error_;
  int next_id_ = 0;
  int64_t round_ = -1;
  std::vector<int> members_;    // worker ids of round_
  std::map<int, int> rank_of_;  // worker id -> rank in round_
  int last_failure_code_ = 0;
  bool finishing_ = false;  // a worker exited 0: the job is ending
  bool stopping_ = false;
  bool interrupted_ = false;
  bool killed_ = false;
  int exit_code_ = 0;
  bool discover_now_ = true;
  Deadline next_discovery_ = Deadline::After(0);
  Deadline kill_deadline_ = Deadline::Never();
  Deadline below_min_ = Deadline::Never();
  Deadline reset_ = Deadline::Never();
  double liveness_seconds_ = 5.0;  // HVD_ELASTIC_LIVENESS_SECONDS; 0: off
};

std::vector<LiveWorker> Driver::Eligible() const {
  std::vector<LiveWorker> live;
  for (const auto& w : workers_) {
    if (!w->exited && !w->removed && w->ready) live.push_back({w->id, w->host});
  }
  return live;
}

// Training is over: a replacement still waiting for its first round would
// wait for HVD_ELASTIC_TIMEOUT. It holds no state; stop it.
void Driver::StopNonMembers() {
  for (auto& w : workers_) {
    if (w->exited || w->removed || rank_of_.count(w->id)) continue;
    if (opt_.verbose) std::fprintf(stderr, "hvdrun: stopping worker %d (in no round)\n", w->id);
    w->removed = true;
    w->proc.Signal(SIGTERM);
  }
}

void Driver::CheckReadiness() {
  for (auto& w : workers_) {
    if (w->exited || w->removed || w->ready) continue;
    std::string ignored;
    w->ready = client_->Get(elastic::ReadyKey(std::to_string(w->id)), 0, &ignored).ok();
  }
}

// A worker whose heartbeat stopped for the liveness interval is stopped or
// frozen: its TCP connections stay open, so the survivors would wait for it
// until a deadline. Killing it turns the stall into a loss they see at once.
void Driver::CheckHeartbeats() {
  if (liveness_seconds_ <= 0) return;
  for (auto& w : workers_) {
    if (w->exited || w->removed) continue;
    int64_t beat = 0;
    if (!client_->Add(elastic::HeartbeatKey(std::to_string(w->id)), 0, &beat).ok()) return;
    if (beat != w->heartbeat) {
      w->heartbeat = beat;
      w->silent_until = Deadline::After(liveness_seconds_);
    } else if (beat > 0 && w->silent_until.Expired()) {
      std::fprintf(stderr,
                   "hvdrun: worker %d on host %s sent no heartbeat for %g s "
                   "(HVD_ELASTIC_LIVENESS_SECONDS; stopped or hung); killing it\n",
                   w->id, w->host.c_str(), liveness_seconds_);
      w->proc.Signal(SIGKILL);
      w->silent_until = Deadline::Never();
    }
  }
}

// Whether every member of the current round has read its place: a growing
// round published earlier would leave members building the old world alone.
bool Driver::RoundFullyJoined() {
  if (round_ < 0) return true;
  int64_t joined = 0;
  if (!client_->Add(elastic::JoinedKey(round_), 0, &joined).ok()) return false;
  return joined >= static_cast<int64_t>(members_.size());
}

void Driver::SignalAll(int sig) {
  for (auto& w : workers_) w->proc.Signal(sig);
}

void Driver::Stop(int code, const std::string& why) {
  if (stopping_) return;
  if (!why.empty()) std::fprintf(stderr, "hvdrun: %s\n", why.c_str());
  stopping_ = true;
  exit_code_ = code;
  SignalAll(SIGTERM);
  kill_deadline_ = Deadline::After(opt_.grace_seconds);
}

void Driver::Failure(const std::string& host) {
  HostHealth& h = health_[host];
  if (++h.failures < kFailuresBeforeBlacklist) return;
  h.failures = 0;
  h.blacklisted_until = Deadline::After(opt_.blacklist_cooldown_seconds);
  std::fprintf(stderr, "hvdrun: workers on host %s keep failing; no new workers there for %g s\n",
               host.c_str(), opt_.blacklist_cooldown_seconds);
}

void Driver::OnExit(Worker* w) {
  w->exited = true;
  const int st = w->proc.wait_status();
  const int code = ExitCodeOf(st);
  auto rank = rank_of_.find(w->id);
  const std::string who =
      "worker " + std::to_string(w->id) +
      (rank != rank_of_.end() ? " (rank " + std::to_string(rank->second) + ")" : std::string()) +
      " on host " + w->host + " " + DescribeWaitStatus(st);
  if (stopping_ || w->removed || code == 0) {
    if (opt_.verbose) std::fprintf(stderr, "hvdrun: %s\n", who.c_str());
    // The first clean exit means training is over: no more rounds or
    // workers, the others are expected to finish too.
    if (!stopping_ && !w->removed && !finishing_) {
      finishing_ = true;
      StopNonMembers();
    }
    return;
  }
  if (finishing_) {
    Stop(code, who + " after other workers had finished; stopping the job");
    return;
  }
  std::fprintf(stderr, "hvdrun: %s; continuing without it (elastic)\n", who.c_str());
  last_failure_code_ = code;
  Failure(w->host);
  discover_now_ = true;  // a failure often comes with a host change
}

void Driver::Reap() {
  for (auto& w : workers_) {
    if (!w->exited && w->proc.Poll()) OnExit(w.get());
  }
}

void Driver::Discover() {
  discover_now_ = false;
  next_discovery_ = Deadline::After(kDiscoveryIntervalSeconds);
  if (opt_.host_discovery_script.empty()) {
    hosts_ = job_.fixed_hosts;
    return;
  }
  std::vector<HostSlots> found;
  Status s =
      DiscoverHosts(opt_.host_discovery_script, job_.environment, kDiscoveryTimeoutSeconds, &found);
  if (!s.ok()) {
    // Keep the last good list: a flaky script must not look like every host
    // leaving. Say so once per distinct message.
    if (s.message() != discovery_error_) {
      std::fprintf(stderr, "hvdrun: %s (keeping the previous host list)\n", s.message().c_str());
    }
    discovery_error_ = s.message();
    return;
  }
  discovery_error_.clear();
  hosts_ = std::move(found);
}

void Driver::RemoveWorkersOfVanishedHosts() {
  std::map<std::string, int> slots;
  for (const auto& h : hosts_) slots[h.name] = h.slots;
  std::map<std::string, int> kept;
  for (auto& w : workers_) {  // oldest first: they keep their places
    if (w->exited || w->removed) continue;
    auto it = slots.find(w->host);
    if (it != slots.end() && kept[w->host] < it->second) {
      ++kept[w->host];
      continue;
    }
    std::fprintf(stderr, "hvdrun: host %s %s; stopping worker %d there\n", w->host.c_str(),
                 it == slots.end() ? "left the host list" : "has fewer slots now", w->id);
    w->removed = true;
    w->proc.Signal(SIGTERM);
  }
}

void Driver::Spawn(const std::string& host) {
  const int id = next_id_++;
  RankPlacement place;
  place.host = host;
  EnvList vars;
  for (auto& kv : RankVariables(place, job_.facts, job_.environment)) {
    if (!IsRankSpecific(kv.first)) vars.push_back(std::move(kv));
  }
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "%g",
                opt_.elastic_timeout_seconds + kWorkerTimeoutSlackSeconds);
  vars.emplace_back("HVD_ELASTIC", "1");
  vars.emplace_back("HVD_WORKER_ID", std::to_string(id));
  vars.emplace_back("HVD_ELASTIC_TIMEOUT", timeout);
  auto w = std::make_unique<Worker>(id, host);
  w->ready = round_ < 0;
  std::vector<std::string> argv, env;
  if (IsLocalHost(host)) {
    argv = opt_.command;
    for (const auto& kv : job_.environment) {
      if (!IsRankSpecific(kv.substr(0, kv.find('=')))) env.push_back(kv);
    }
    env = MergeEnvironment(env, vars);
  } else {
    EnvList remote = ForwardedVariables(job_.environment);
    remote.insert(remote.end(), vars.begin(), vars.end());
    argv = RemoteArgv(job_.shell, host, job_.cwd, remote, opt_.command);
    env = job_.environment;
  }
  if (opt_.verbose) {
    std::string line = "hvdrun: worker " + std::to_string(id) + " on " + host + ":";
    for (const auto& a : argv) line += " " + a;
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  Status s;
  if (!opt_.output_dir.empty()) {
    s = OpenOutputCopies(opt_.output_dir, "worker." + std::to_string(id), &w->out_copy,
                         &w->err_copy);
  }
  if (s.ok()) s = w->proc.Start(argv, env);
  if (!s.ok()) {
    std::fprintf(stderr, "hvdrun: cannot start a worker on host %s: %s\n", host.c_str(),
                 s.message().c_str());
    Failure(host);
    return;
  }
  workers_.push_back(std::move(w));
}

void Driver::SpawnWorkers() {
  std::map<std::string, int> per_host;
  std::map<std::string, bool> blacklisted;
  int running = 0;
  for (const auto& w : workers_) {
    if (w->exited) continue;
    ++per_host[w->host];  // removed ones still hold their slot until they exit
    ++running;
  }
  for (const auto& h : health_) blacklisted[h.first] = h.second.blacklisted();
  for (const auto& host : PlanSpawns(hosts_, per_host, blacklisted, running, opt_.max_np)) {
    Spawn(host);
  }
}

void Driver::Publish(const std::vector<LiveWorker>& live) {
  const int64_t round = round_ + 1;
  std::vector<RoundSlot> plan = PlanRound(live);
  Status s;
  for (const auto& slot : plan) {
    if (s.ok()) {
      s = client_->Set(elastic::WorkerKey(round, std::to_string(slot.worker_id)),
                       AssignmentValue(slot));
    }
  }
  // The round number before the marker workers wait on: a worker that sees
  // the marker reads a round whose assignments are all written.
  if (s.ok()) s = client_->Set(elastic::RoundKey(), std::to_string(round));
  if (s.ok()) s = client_->Set(elastic::PublishedKey(round), "1");
  if (!s.ok()) {
    Stop(1, "cannot publish elastic round " + std::to_string(round) + ": " + s.message());
    return;
  }
  round_ = round;
  members_.clear();
  rank_of_.clear();
  std::string line;
  for (const auto& slot : plan) {
    members_.push_back(slot.worker_id);
    rank_of_[slot.worker_id] = slot.rank;
    line += (line.empty() ? "" : ", ") + std::to_string(slot.rank) + ":worker " +
            std::to_string(slot.worker_id) + "@" + slot.host;
  }
  std::sort(members_.begin(), members_.end());
  std::fprintf(stderr, "hvdrun: elastic round %lld with %zu workers (rank:worker@host: %s)\n",
               static_cast<long long>(round), plan.size(), line.c_str());
  reset_ = Deadline::Never();
}

void Driver::UpdateRound() {
  std::vector<LiveWorker> live = Eligible();
  std::vector<int> ids;
  for (const auto& w : live) ids.push_back(w.id);
  std::sort(ids.begin(), ids.end());
  if (ids == members_) return;
  // Losing a member: publish the survivors' round at once (they shrink and
  // go on). Only adding workers: wait until the current round is joined.
  const bool lost = !std::includes(ids.begin(), ids.end(), members_.begin(), members_.end());
  if (!lost && !RoundFullyJoined()) return;
  if (static_cast<int>(live.size()) >= opt_.min_np) {
    below_min_ = Deadline::Never();
    Publish(live);
    return;
  }
  if (live.empty() && last_failure_code_ != 0) {
    // Recovery restores from a survivor's memory; with none left there is
    // nothing to continue from.
    Stop(last_failure_code_, "no worker is left to continue from; stopping the job");
    return;
  }
  if (below_min_.never()) {
    below_min_ = Deadline::After(opt_.elastic_timeout_seconds);
    std::fprintf(stderr,
                 "hvdrun: %zu workers, fewer than --min-np %d; waiting up to %g s "
                 "(--elastic-timeout) for more hosts\n",
                 live.size(), opt_.min_np, opt_.elastic_timeout_seconds);
  } else if (below_min_.Expired()) {
    Stop(1, "only " + std::to_string(live.size()) + " workers, fewer than --min-np " +
                std::to_string(opt_.min_np) + ", and no new hosts within --elastic-timeout; " +
                "stopping the job");
  }
}

void Driver::CheckResetRequests() {
  if (round_ < 0) return;
  int64_t requests = 0;
  if (!client_->Add(elastic::ResetKey(round_), 0, &requests).ok() || requests == 0) return;
  if (reset_.never()) {
    reset_ = Deadline::After(kResetGraceSeconds);
  } else if (reset_.Expired()) {
    std::fprintf(stderr,
                 "hvdrun: workers of round %lld failed without any worker exiting; "
                 "starting a new round\n",
                 static_cast<long long>(round_));
    Publish(Eligible());
  }
}

int Driver::Run() {
  rendezvous::UniqueFd sfd = OpenJobSignalFd();
  if (!sfd.valid()) return 1;
  Status s = KVClient::Connect(job_.facts.rendezvous_addr, job_.facts.rendezvous_port, job_.secret,
                               30.0, &client_);
  if (!s.ok()) {
    std::fprintf(stderr, "hvdrun: cannot reach the own rendezvous store: %s\n",
                 s.message().c_str());
    return 1;
  }
  for (const auto& kv : job_.environment) {
    const std::string name = "HVD_ELASTIC_LIVENESS_SECONDS=";
    if (kv.compare(0, name.size(), name) == 0) {
      liveness_seconds_ = std::atof(kv.c_str() + name.size());
    }
  }
  Deadline drain = Deadline::Never();
  OutputPoll poll;
  while (true) {
    Reap();
    if (!stopping_ && !finishing_) {
      if (discover_now_ || next_discovery_.Expired()) {
        Discover();
        RemoveWorkersOfVanishedHosts();
      }
      SpawnWorkers();
      CheckReadiness();
      CheckHeartbeats();
      UpdateRound();
      if (!stopping_) CheckResetRequests();
    }
    if (stopping_ && !killed_ && kill_deadline_.Expired()) {
      SignalAll(SIGKILL);
      killed_ = true;
    }
    bool all_exited = true;
    for (const auto& w : workers_) all_exited = all_exited && w->exited;
    const bool ending = stopping_ || finishing_;
    if (ending && all_exited && drain.never()) drain = Deadline::After(kDrainSeconds);

    poll.Begin(sfd.get());
    for (auto& w : workers_) poll.Add(w.get());
    if (ending && all_exited && (poll.open_pipes() == 0 || drain.Expired())) break;

    int timeout = kTickMs;
    if (stopping_ && !killed_) timeout = std::min(timeout, kill_deadline_.PollTimeoutMs());
    int r = poll.Wait(timeout);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    if (poll.signal_ready()) {
      for (int sig : ReadJobSignals(sfd.get())) {
        if (interrupted_) {
          SignalAll(SIGKILL);  // a second interrupt: out now
          killed_ = true;
          continue;
        }
        std::fprintf(stderr, "hvdrun: received signal %d (%s); forwarding it to every worker\n",
                     sig, strsignal(sig));
        SignalAll(sig);
        interrupted_ = true;
        stopping_ = true;
        exit_code_ = 128 + sig;
        kill_deadline_ = Deadline::After(opt_.grace_seconds);
      }
    }
    poll.RelayReady();
  }
  for (auto& w : workers_) {
    w->out.Flush();
    w->err.Flush();
  }
  return exit_code_;
}

}  // namespace

int RunElasticJob(const ElasticJob& job) {
  Driver driver(job);
  return driver.Run();
}

}  // namespace run
}  // namespace hvd
