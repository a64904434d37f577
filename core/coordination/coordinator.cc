#include "core/coordination/coordinator.h"

#include <algorithm>

#include "core/common/logging.h"
#include "core/coordination/fusion.h"
#include "core/coordination/response_rules.h"
#include "core/observability/autotune/autotuner.h"
#include "core/observability/timeline.h"

namespace hvd {
namespace {

bool Cacheable(const Response& r) {
  return r.error_code == Code::kOk && r.names.size() == 1 && r.joined_ranks.empty() &&
         (r.type == OpType::kAllreduce || r.type == OpType::kAllgather ||
          r.type == OpType::kBroadcast || r.type == OpType::kAlltoall ||
          r.type == OpType::kReducescatter);
}

Response ErrorResponse(OpType type, const std::string& name, Code code, const std::string& error) {
  Response r;
  r.type = type;
  r.names = {name};
  r.error_code = code;
  r.error = error;
  return r;
}

}  // namespace

Coordinator::Coordinator(int size, int32_t set_id, const Config& config)
    : size_(size),
      set_id_(set_id),
      config_(config),
      cache_(config.cache_capacity, config.cache_capacity_max()),
      slot_changed_(static_cast<size_t>(std::max(0, config.cache_capacity)), 0),
      waits_(static_cast<size_t>(std::max(0, config.cache_capacity))),
      hit_by_(static_cast<size_t>(size), SlotSet(std::max(0, config.cache_capacity))),
      waiting_slots_(std::max(0, config.cache_capacity)),
      stalls_(config, set_id) {}

Status Coordinator::OnReport(int rank, Report report) {
  if (stopped_) return Status::OK();
  if (rank < 0 || rank >= size_) return Status::Internal("report from unknown rank");
  if (report.shutdown &&
      std::find(shutdown_ranks_.begin(), shutdown_ranks_.end(), rank) == shutdown_ranks_.end()) {
    shutdown_ranks_.push_back(rank);
  }
  for (int32_t slot : report.invalid) RecordInvalid(slot, report.epoch);
  const Clock::time_point now = report.hits.empty() ? Clock::time_point() : Clock::now();
  for (int32_t slot : report.hits) RecordHit(rank, slot, report.epoch, now);
  for (auto& q : report.requests) {
    q.rank = rank;  // trust the sender, not the content
    HVD_RETURN_IF_ERROR(CheckPeerRequest(q, size_));
    RecordRequest(std::move(q));
  }
  return Status::OK();
}

void Coordinator::OnPeerLost(int rank, const std::string& why) {
  if (std::find(lost_ranks_.begin(), lost_ranks_.end(), rank) == lost_ranks_.end()) {
    lost_ranks_.push_back(rank);
  }
  if (lost_error_.empty()) lost_error_ = why;
}

void Coordinator::RecordHit(int rank, int32_t slot, int64_t epoch, Clock::time_point now) {
  // A slot the member looked up before it changed is stale: the member
  // renegotiates that tensor when it applies the change.
  if (slot < 0 || slot >= cache_.capacity() || epoch < slot_changed_[slot] || !cache_.used(slot)) {
    return;
  }
  SlotSet& mine = hit_by_[static_cast<size_t>(rank)];
  if (mine.Has(slot)) return;
  mine.Insert(slot);
  hits_changed_ = true;
  if (!waiting_slots_.Has(slot)) {
    SlotWait& w = waits_[slot];
    w.since = now;
    w.warned = false;
    waiting_slots_.Insert(slot);
    // Marked in use at the first report, before this decision's new
    // tensors ask the cache for a slot.
    cache_.Touch(slot);
  }
}

void Coordinator::ClearWait(int32_t slot) {
  if (!waiting_slots_.Has(slot)) return;
  for (SlotSet& s : hit_by_) s.Erase(slot);
  waiting_slots_.Erase(slot);
}

void Coordinator::RecordInvalid(int32_t slot, int64_t epoch) {
  if (slot < 0 || slot >= cache_.capacity() || epoch < slot_changed_[slot] || !cache_.used(slot)) {
    return;
  }
  cache_.Erase(slot);
  erased_.push_back(slot);
}

void Coordinator::RecordRequest(Request&& q) {
  if (q.type == OpType::kJoin) {
    joined_.insert(q.rank);
    last_joined_ = q.rank;
    hits_changed_ = true;  // a joined rank counts as present for every slot
    return;
  }
  auto it = table_.find(q.name);
  if (it == table_.end()) {
    Pending p;
    p.seen.assign(static_cast<size_t>(size_), false);
    p.since = Clock::now();
    it = table_.emplace(q.name, std::move(p)).first;
    arrival_order_.push_back(q.name);
  }
  Pending& p = it->second;
  if (p.seen[q.rank]) return;  // duplicate from a confused peer: ignore
  p.seen[q.rank] = true;
  p.requests.push_back(std::move(q));
  const Request& mine = p.requests.back();
  if (timeline_ && timeline_->active()) {
    if (p.requests.size() == 1) timeline_->NegotiateStart(mine.name, mine.type);
    timeline_->NegotiateRankReady(mine.name, mine.rank);
  }
}

Response Coordinator::Decided(const std::string& name) {
  Pending p = std::move(table_.at(name));
  table_.erase(name);
  if (timeline_ && timeline_->active()) timeline_->NegotiateEnd(name);
  return DecideResponse(name, std::move(p.requests), joined_, size_);
}

void Coordinator::Erase(int32_t slot, int64_t seq, std::vector<Action>* out) {
  slot_changed_[slot] = seq;
  ClearWait(slot);
  Action a;
  a.kind = Action::kErase;
  a.slot = slot;
  out->push_back(std::move(a));
}

void Coordinator::AddFull(int64_t seq, Response r, const Request& ref, std::vector<Action>* out) {
  Action a;
  a.kind = Action::kRun;
  if (Cacheable(r) && cache_.capacity() > 0) {
    int evicted = -1;
    a.slot = cache_.Put(r, ref, &evicted);
    if (static_cast<size_t>(cache_.capacity()) > slot_changed_.size()) GrowSlots();
    if (evicted >= 0) Erase(evicted, seq, out);
    if (a.slot >= 0) {
      slot_changed_[a.slot] = seq;
      ClearWait(a.slot);
    }
    WarnIfCacheTooSmall();
  }
  a.response = std::move(r);
  out->push_back(std::move(a));
}

void Coordinator::GrowSlots() {
  const int n = cache_.capacity();
  slot_changed_.resize(static_cast<size_t>(n), 0);
  waits_.resize(static_cast<size_t>(n));
  for (SlotSet& s : hit_by_) s.Grow(n);
  waiting_slots_.Grow(n);
}

void Coordinator::WarnIfCacheTooSmall() {
  // Tensors the cache turned away keep coming back, more of them than there
  // are slots: more than one change of working set would cause.
  if (warned_cache_ || cache_.recurring_misses() <= 2 * int64_t{cache_.max_capacity()}) return;
  warned_cache_ = true;
  HVD_LOG(kWarning) << "process set " << set_id_ << ": the response cache's " << cache_.capacity()
                    << " slots (HVD_CACHE_CAPACITY) hold fewer tensors than the job "
                       "submits every step; the others are negotiated in full each time, "
                       "several times slower per tensor. Set HVD_CACHE_CAPACITY (hvdrun "
                       "--cache-capacity) to at least the number of distinct tensor names a "
                       "step submits.";
}

void Coordinator::DecideFull(int64_t seq, std::vector<Action>* out, int64_t* bytes) {
  std::vector<std::string> keep;
  keep.reserve(arrival_order_.size());
  auto emit = [&](const std::string& name) {
    const Request ref = table_.at(name).requests.front();
    Response r = Decided(name);
    if (r.error_code == Code::kOk) *bytes += ResponseBytes(r, size_);
    AddFull(seq, std::move(r), ref, out);
  };
  for (auto& name : arrival_order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;  // failed by the stall inspector
    const Pending& p = it->second;
    int count = static_cast<int>(p.requests.size());
    for (int r : joined_) count += p.seen[r] ? 0 : 1;
    const Request& first = p.requests.front();
    // Refused at the first request, not after every rank asked: ranks that
    // name it differently (an unnamed op some skipped) would wait for each other.
    const bool refused = RefusedWhileJoined(first.type, joined_);
    if (count < size_ && !refused) {
      keep.push_back(std::move(name));
      continue;
    }
    if (refused || first.group.empty() || first.group_size <= 1) {
      emit(name);
      continue;
    }
    // Grouped: hold members until the whole group is ready, then emit together.
    const std::string group = first.group;
    auto& members = group_ready_[group];
    members.push_back(name);
    if (static_cast<int>(members.size()) >= first.group_size) {
      for (const auto& m : members) emit(m);
      group_ready_.erase(group);
    }
  }
  arrival_order_ = std::move(keep);
  if (!joined_.empty() && static_cast<int>(joined_.size()) == size_) {
    Response r;
    r.type = OpType::kJoin;
    r.names = {"join." + std::to_string(set_id_)};
    r.last_joined = last_joined_;
    AddFull(seq, std::move(r), Request(), out);
    joined_.clear();
  }
}

void Coordinator::DecideCached(std::vector<Action>* out, int64_t* bytes) {
  if (!hits_changed_) return;  // nothing can have become ready
  hits_changed_ = false;
  Action run;
  run.kind = Action::kRunCached;
  run.ranks.assign(joined_.begin(), joined_.end());
  run.slots.reserve(static_cast<size_t>(waiting_slots_.size()));
  for (size_t i = 0; i < waiting_slots_.words(); ++i) {
    // Ready: hit by every rank that has not joined (a joined rank counts as
    // present for every slot).
    uint64_t ready = waiting_slots_.word(i);
    for (int r = 0; r < size_ && ready != 0; ++r) {
      if (joined_.empty() || !joined_.count(r)) ready &= hit_by_[static_cast<size_t>(r)].word(i);
    }
    if (ready == 0) continue;
    for (uint64_t m = ready; m != 0; m &= m - 1) {
      const auto slot = static_cast<int32_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(m)));
      const Response& r = *cache_.response(slot);
      if (RefusedWhileJoined(r.type, joined_)) {
        // Joined ranks hold no entry for it: fail it as a fresh request would.
        out->push_back(Action());
        out->back().kind = Action::kRun;
        out->back().response = DecideResponse(r.names[0], {cache_.request(slot)}, joined_, size_);
      } else {
        run.slots.push_back(slot);
        if (autotuner_) *bytes += ResponseBytes(r, size_);  // only autotune reads it
      }
    }
    for (SlotSet& s : hit_by_) s.EraseWord(i, ready);
    waiting_slots_.EraseWord(i, ready);
  }
  if (!run.slots.empty()) out->push_back(std::move(run));
}

void Coordinator::CheckStalls(std::vector<Action>* out) {
  if (!stalls_.Due(Clock::now())) return;
  auto detail = [this](const std::vector<int>& who, const std::string& tensor) {
    return std::function<std::string()>(
        [this, who, tensor] { return describe_ ? describe_(who, tensor) : std::string(); });
  };
  auto missing = [&](const std::vector<bool>& has, bool allreduce) {
    std::vector<int> m;
    for (int r = 0; r < size_; ++r) {
      if (!has[r] && !(allreduce && joined_.count(r))) m.push_back(r);
    }
    return m;
  };
  for (const auto& name : arrival_order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    Pending& p = it->second;
    const OpType type = p.requests.front().type;
    std::string error;
    const std::vector<int> who = missing(p.seen, type == OpType::kAllreduce);
    if (stalls_.Inspect(name, type, p.since, who, &p.warned, &error, detail(who, name))) {
      out->push_back(Action());
      out->back().response = ErrorResponse(type, name, Code::kTimeout, error);
      table_.erase(it);
    }
  }
  std::vector<bool> has(static_cast<size_t>(size_));
  waiting_slots_.ForEach([&](int32_t slot) {
    SlotWait& w = waits_[slot];
    const Response& r = *cache_.response(slot);
    std::string error;
    for (int k = 0; k < size_; ++k) has[k] = hit_by_[static_cast<size_t>(k)].Has(slot);
    const std::vector<int> who = missing(has, r.type == OpType::kAllreduce);
    if (stalls_.Inspect(r.names[0], r.type, w.since, who, &w.warned, &error,
                        detail(who, r.names[0]))) {
      out->push_back(Action());
      out->back().response = ErrorResponse(r.type, r.names[0], Code::kTimeout, error);
      ClearWait(slot);
    }
  });
  stalls_.Flush();
}

bool Coordinator::Decide(Decision* out) {
  if (stopped_) return false;
  const int64_t seq = seq_ + 1;
  std::vector<Action> actions;
  if (!lost_ranks_.empty()) {
    Action a;
    a.kind = Action::kPeerLost;
    a.ranks = lost_ranks_;
    a.error = lost_error_;
    actions.push_back(std::move(a));
    stopped_ = true;
  } else {
    for (int32_t slot : erased_) Erase(slot, seq, &actions);
    erased_.clear();
    int64_t bytes = 0;
    DecideFull(seq, &actions, &bytes);
    DecideCached(&actions, &bytes);
    CheckStalls(&actions);
    if (autotuner_ && autotuner_->Record(bytes)) {
      Action a;
      a.kind = Action::kParams;
      a.params = autotuner_->params();
      actions.push_back(std::move(a));
    }
    if (!shutdown_ranks_.empty()) {
      Action a;
      a.kind = Action::kShutdown;
      a.ranks = shutdown_ranks_;
      actions.push_back(std::move(a));
      stopped_ = true;
    }
  }
  if (actions.empty()) return false;
  seq_ = seq;
  out->seq = seq;
  out->actions = std::move(actions);
  return true;
}

Coordinator::Clock::time_point Coordinator::next_check() const {
  if (table_.empty() && waiting_slots_.empty()) return Clock::time_point::max();
  return stalls_.next();
}

}  // namespace hvd
