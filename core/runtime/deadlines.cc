// The runtime's liveness and deadline duties: answering probes, naming the
// ranks behind a failure, and the watchdog's check of operations past
// HVD_OP_TIMEOUT_SECONDS that no coordinator decision can end.
#include <algorithm>

#include "core/common/logging.h"
#include "core/runtime/runtime.h"
#include "core/runtime/set_loop.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kProbeSeconds = 1.0;
// The coordinator fails a tensor at its deadline; this much later a rank
// concludes the coordinator itself cannot.
constexpr std::chrono::seconds kCoordinatorGrace{2};

std::string Seconds(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string Runtime::DescribeSelf(const ProbeQuestion& q) {
  std::lock_guard<std::mutex> sl(sets_mu_);
  ProcessSet* ps = FindSet(q.set);
  if (!ps) return "has no process set " + std::to_string(q.set) + " (not initialised or removed)";
  if (!ps->member() || !ps->loop) return "is not a member of process set " + std::to_string(q.set);
  return ps->loop->Describe(q.tensor);
}

std::string Runtime::DescribeRanks(const ProcessSet& ps, const std::vector<int>& set_ranks,
                                   const std::string& tensor) {
  if (!liveness_) return "";
  std::vector<int> world;
  for (int r : set_ranks) world.push_back(ps.ranks[static_cast<size_t>(r)]);
  return liveness_->Describe(liveness_->Ask(world, {ps.id, tensor}, kProbeSeconds));
}

std::string Runtime::DescribeGone(const ProcessSet& ps) {
  if (!liveness_) return "";
  std::vector<int> others;
  for (int r : ps.ranks) {
    if (r != topo_.rank) others.push_back(r);
  }
  std::vector<Liveness::Peer> missing;
  for (auto& p : liveness_->Ask(others, {ps.id, ""}, kProbeSeconds)) {
    if (p.result.verdict != ProbeResult::kAnswered) missing.push_back(std::move(p));
  }
  return liveness_->Describe(missing);
}

void Runtime::CheckDeadlines() {
  struct Suspect {
    int32_t set;
    std::vector<int> others;  // world ranks
    std::string what, tensor;
    bool in_collective;
  };
  std::vector<Suspect> suspects;
  const auto now = Clock::now();
  const auto limit = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(config_.op_timeout_seconds));
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    for (auto& kv : sets_) {
      ProcessSet& ps = *kv.second;
      if (!ps.loop || ps.loop->finished()) continue;
      Suspect s{ps.id, {}, "", "", false};
      for (int r : ps.ranks) {
        if (r != topo_.rank) s.others.push_back(r);
      }
      const SetLoop::Activity a = ps.loop->activity();
      std::string oldest;
      if (a.executing && now - a.since > limit) {
        s.what = a.what;
        s.tensor = a.what.substr(a.what.find('\'') + 1);
        s.tensor.pop_back();
        s.in_collective = true;
      } else if (const auto since = ps.queue.Oldest(&oldest);
                 since != Clock::time_point::max() && now - since > limit + kCoordinatorGrace) {
        s.what = "negotiation of '" + oldest + "'";
        s.tensor = oldest;
      } else {
        continue;
      }
      suspects.push_back(std::move(s));
    }
  }
  // Probe without holding sets_mu_: other ranks' watchdogs probe us too.
  for (const Suspect& s : suspects) {
    std::string why = s.what + " in process set " + std::to_string(s.set) +
                      " did not complete within " + Seconds(config_.op_timeout_seconds) +
                      " s of its submission (HVD_OP_TIMEOUT_SECONDS)";
    if (!s.in_collective) why += ", and the set's coordinator did not fail it in time";
    const std::string peers =
        liveness_ ? liveness_->Describe(liveness_->Ask(s.others, {s.set, s.tensor}, kProbeSeconds))
                  : "";
    if (!peers.empty()) why += ": " + peers;
    Expire(s.set, Status::Timeout(why), s.in_collective);
  }
}

void Runtime::Expire(int32_t set, const Status& why, bool in_collective) {
  std::shared_ptr<Comm> data;
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    ProcessSet* ps = FindSet(set);
    if (!ps || !ps->loop) return;
    HVD_LOG(kError) << why.message();
    data = ps->data_comm;
  }
  // Before the callers get the error (they may exit at once): the flight
  // record, and under MPI the job's abort.
  NoteJobFailure(why);
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    ProcessSet* ps = FindSet(set);
    if (!ps || !ps->loop) return;
    ps->loop->FailInFlight(why);
    ps->loop->Abandon(why);
  }
  if (!in_collective || !data) return;
  // MPI cannot leave a collective that never completes: job_end_ aborts the
  // job. Other backends fail the collective in place.
  if (data->transport() != Transport::kMpi) data->Abort();
}

}  // namespace hvd
