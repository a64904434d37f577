#include "core/coordination/controller.h"

#include <algorithm>
#include <functional>

#include "core/common/logging.h"
#include "core/observability/timeline.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

int64_t RowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// If the requests disagree on value(q), describes who has what:
// "rank 0: [4]; ranks 1, 2: [5]".
bool Disagree(const std::vector<Request>& qs,
              const std::function<std::string(const Request&)>& value, std::string* detail) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& q : qs) {
    std::string v = value(q);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
    if (it == groups.end()) {
      groups.push_back({v, {q.rank}});
    } else {
      it->second.push_back(q.rank);
    }
  }
  if (groups.size() <= 1) return false;
  detail->clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) *detail += "; ";
    *detail += (groups[i].second.size() == 1 ? "rank " : "ranks ") + RankList(groups[i].second) +
               ": " + groups[i].first;
  }
  return true;
}

std::string Num(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The C API validates requests before they leave a rank; these checks stop
// a corrupted or hostile peer from making the coordinator overflow or read
// out of bounds.
Status CheckPeerRequest(const Request& q, int size) {
  int64_t n = 1;
  for (auto d : q.shape) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 50) / d)) {
      return Status::Internal("malformed request from rank " + std::to_string(q.rank) +
                              ": bad shape for '" + q.name + "'");
    }
    n *= d;
  }
  if (!q.splits.empty() && static_cast<int>(q.splits.size()) != size) {
    return Status::Internal("malformed request from rank " + std::to_string(q.rank) +
                            ": splits for '" + q.name + "' do not match the set size");
  }
  return Status::OK();
}

}  // namespace

Controller::Controller(Comm* comm, const Config& config, int32_t set_id)
    : comm_(comm),
      config_(config),
      set_id_(set_id),
      rank_(comm->rank()),
      size_(comm->size()),
      cache_(config.cache_capacity),
      hits_(static_cast<size_t>(std::max(0, config.cache_capacity))),
      last_stall_check_(Clock::now()) {}

void Controller::SetHit(int pos, const Request* q, Clock::time_point now) {
  PendingHit& h = hits_[static_cast<size_t>(pos)];
  h.pending = true;
  h.request = q;
  h.since = now;
  ++num_hits_;
}

const Request& Controller::TakeHit(int pos) {
  PendingHit& h = hits_[static_cast<size_t>(pos)];
  h.pending = false;
  --num_hits_;
  return *h.request;
}

bool Controller::Cacheable(OpType t) {
  return t == OpType::kAllreduce || t == OpType::kAllgather || t == OpType::kBroadcast ||
         t == OpType::kAlltoall || t == OpType::kReducescatter;
}

Status Controller::RunCycle(const std::vector<const Request*>& requests, bool shutdown,
                            CycleOutput* out) {
  out->responses.clear();
  out->shutdown = false;
  out->shutdown_ranks.clear();

  std::vector<Request> uncached = std::move(resend_);
  resend_.clear();
  std::set<int> invalid;
  const auto now = Clock::now();
  for (const Request* q : requests) {
    int pos = -1;
    auto state = (cache_.capacity() > 0 && Cacheable(q->type)) ? cache_.Lookup(*q, &pos)
                                                               : ResponseCache::State::kMiss;
    if (state == ResponseCache::State::kHit && !hits_[static_cast<size_t>(pos)].pending) {
      SetHit(pos, q, now);
      continue;
    }
    if (state == ResponseCache::State::kInvalid) invalid.insert(pos);
    uncached.push_back(*q);
  }

  if (rank_ == 0 && config_.stall_check_seconds > 0 && !config_.stall_check_disabled) {
    ResponseList stalls;
    CheckStalls(&stalls);
    for (auto& r : stalls.responses) stalled_errors_.push_back(std::move(r));
  }

  uint64_t flags = 0;
  if (shutdown) flags |= kShutdownFlag | kUncachedFlag;
  if (!uncached.empty() || !stalled_errors_.empty()) flags |= kUncachedFlag;
  if (!invalid.empty()) flags |= kInvalidFlag | kUncachedFlag;
  // A joined rank submits nothing, so cache bits can never be common while
  // it waits: everyone negotiates through the coordinator until all joined.
  if (outstanding_.count("join." + std::to_string(set_id_))) flags |= kJoinedFlag | kUncachedFlag;
  if (StaleHits()) flags |= kStaleHitFlag | kUncachedFlag;

  const size_t nbits = static_cast<size_t>(cache_.capacity());
  std::vector<uint64_t> words(1 + (nbits + 63) / 64, 0);
  words[0] = ~flags;
  for (size_t pos = 0; num_hits_ > 0 && pos < nbits; ++pos) {
    if (hits_[pos].pending) words[1 + pos / 64] |= 1ULL << (pos % 64);
  }
  HVD_RETURN_IF_ERROR(comm_->AllreduceBits(words.data(), words.size(), BitOp::kAnd));
  const uint64_t any = ~words[0];

  if (any & kInvalidFlag) {
    std::vector<uint64_t> inv(words.size(), 0);
    for (int pos : invalid) inv[1 + pos / 64] |= 1ULL << (pos % 64);
    HVD_RETURN_IF_ERROR(comm_->AllreduceBits(inv.data(), inv.size(), BitOp::kOr));
    for (size_t pos = 0; pos < nbits; ++pos) {
      if (!(inv[1 + pos / 64] & (1ULL << (pos % 64)))) continue;
      words[1 + pos / 64] &= ~(1ULL << (pos % 64));
      if (hits_[pos].pending) uncached.push_back(TakeHit(static_cast<int>(pos)));
      cache_.Erase(static_cast<int>(pos));
    }
  }

  if (any & kJoinedFlag) {
    for (size_t pos = 0; num_hits_ > 0 && pos < nbits; ++pos) {
      if (hits_[pos].pending) uncached.push_back(TakeHit(static_cast<int>(pos)));
    }
  }

  // Hits common to every rank run now, in slot order (the same everywhere).
  for (size_t pos = 0; pos < nbits; ++pos) {
    if (!(words[1 + pos / 64] & (1ULL << (pos % 64)))) continue;
    out->responses.push_back(cache_.response(static_cast<int>(pos)));
    cache_.Touch(static_cast<int>(pos));
    TakeHit(static_cast<int>(pos));
  }

  // The coordinator's stall inspector only sees what reaches the coordinator,
  // and a cache hit that one rank never submits would wait in hits_
  // forever, unreported. So when any rank has a stale hit, every rank moves
  // all its remaining hits to the coordinator path in this same cycle (the
  // flag is agreed by the allreduce above, so no rank keeps a bit the others
  // dropped), and keeps doing so while a moved one is unanswered, so that a
  // late rank's hit follows the others there instead of waiting on its bit.
  if (any & kStaleHitFlag) {
    for (size_t pos = 0; num_hits_ > 0 && pos < nbits; ++pos) {
      if (!hits_[pos].pending) continue;
      demoted_.insert(hits_[pos].request->name);
      uncached.push_back(TakeHit(static_cast<int>(pos)));
    }
  }

  if (any & kUncachedFlag) {
    RequestList mine;
    mine.shutdown = shutdown;
    for (auto& q : uncached) {
      q.rank = rank_;
      outstanding_[q.name] = q;
    }
    mine.requests = std::move(uncached);
    ResponseList list;
    HVD_RETURN_IF_ERROR(Coordinate(mine, &list));
    for (auto& r : list.responses) {
      // Cache only what every rank took part in, in list order on all ranks.
      bool cache_it = r.error_code == Code::kOk && Cacheable(r.type) && r.joined_ranks.empty() &&
                      r.names.size() == 1 && cache_.capacity() > 0;
      for (const auto& name : r.names) {
        auto it = outstanding_.find(name);
        if (it == outstanding_.end()) continue;
        if (cache_it) cache_.Put(r, it->second);
        outstanding_.erase(it);
      }
      out->responses.push_back(std::make_shared<const Response>(std::move(r)));
    }
    out->shutdown = list.shutdown;
    out->shutdown_ranks = std::move(list.shutdown_ranks);
    // Puts may have evicted slots this rank still waits on: renegotiate them.
    for (size_t pos = 0; num_hits_ > 0 && pos < nbits; ++pos) {
      const int p = static_cast<int>(pos);
      if (hits_[pos].pending &&
          (!cache_.used(p) || cache_.request(p).name != hits_[pos].request->name)) {
        resend_.push_back(TakeHit(p));
      }
    }
  } else if (any & kShutdownFlag) {
    out->shutdown = true;
  }
  return Status::OK();
}

Status Controller::Coordinate(const RequestList& mine, ResponseList* out) {
  std::vector<std::string> all;
  HVD_RETURN_IF_ERROR(comm_->GatherBytes(EncodeRequestList(mine), 0, &all));
  std::string reply;
  if (rank_ == 0) {
    ResponseList list;
    for (int r = 0; r < size_; ++r) {
      RequestList theirs;
      Status s = DecodeRequestList(all[r], &theirs);
      if (!s.ok()) return Status::Internal(s.message() + " (rank " + std::to_string(r) + ")");
      if (theirs.shutdown) {
        list.shutdown = true;
        list.shutdown_ranks.push_back(r);
      }
      for (auto& q : theirs.requests) {
        q.rank = r;  // trust the position, not the content
        HVD_RETURN_IF_ERROR(CheckPeerRequest(q, size_));
        Record(q);
      }
    }
    EmitReady(&list);
    for (auto& e : stalled_errors_) list.responses.push_back(std::move(e));
    stalled_errors_.clear();
    reply = EncodeResponseList(list);
  }
  HVD_RETURN_IF_ERROR(comm_->BroadcastBytes(&reply, 0));
  return DecodeResponseList(reply, out);
}

void Controller::Record(const Request& q) {
  if (q.type == OpType::kJoin) {
    joined_.insert(q.rank);
    last_joined_ = q.rank;
    return;
  }
  auto it = table_.find(q.name);
  if (it == table_.end()) {
    Pending p;
    p.seen.assign(static_cast<size_t>(size_), false);
    p.first_seen = Clock::now();
    it = table_.emplace(q.name, std::move(p)).first;
    arrival_order_.push_back(q.name);
  }
  Pending& p = it->second;
  if (p.seen[q.rank]) return;  // duplicate from a confused peer: ignore
  p.seen[q.rank] = true;
  p.requests.push_back(q);
  if (timeline_ && timeline_->active()) {
    if (p.requests.size() == 1) timeline_->NegotiateStart(q.name, q.type);
    timeline_->NegotiateRankReady(q.name, q.rank);
  }
}

bool Controller::IsReady(const std::string& name) const {
  const Pending& p = table_.at(name);
  int count = static_cast<int>(p.requests.size());
  for (int r : joined_) count += p.seen[r] ? 0 : 1;
  return count >= size_;
}

void Controller::EmitReady(ResponseList* out) {
  std::vector<std::string> keep;
  keep.reserve(arrival_order_.size());
  for (auto& name : arrival_order_) {
    if (!table_.count(name)) continue;  // removed by the stall inspector
    if (!IsReady(name)) {
      keep.push_back(std::move(name));
      continue;
    }
    const Request& first = table_.at(name).requests.front();
    if (first.group.empty() || first.group_size <= 1) {
      out->responses.push_back(Decide(name));
      continue;
    }
    // Grouped: hold members until the whole group is ready, then emit together.
    auto& members = group_ready_[first.group];
    members.push_back(name);
    if (static_cast<int>(members.size()) >= first.group_size) {
      const std::string group = first.group;  // Decide() erases the entry `first` lives in
      for (const auto& m : members) out->responses.push_back(Decide(m));
      group_ready_.erase(group);
    }
  }
  arrival_order_ = std::move(keep);
  if (!joined_.empty() && static_cast<int>(joined_.size()) == size_) {
    Response r;
    r.type = OpType::kJoin;
    r.names = {"join." + std::to_string(set_id_)};
    r.last_joined = last_joined_;
    out->responses.push_back(std::move(r));
    joined_.clear();
  }
}

Response Controller::Decide(const std::string& name) {
  Pending p = std::move(table_.at(name));
  table_.erase(name);
  if (timeline_ && timeline_->active()) timeline_->NegotiateEnd(name);
  std::vector<Request>& qs = p.requests;
  std::sort(qs.begin(), qs.end(),
            [](const Request& a, const Request& b) { return a.rank < b.rank; });
  const Request& ref = qs.front();

  Response r;
  r.type = ref.type;
  r.names = {name};
  r.dtype = ref.dtype;
  r.reduce_op = ref.reduce_op;
  r.device = ref.device;
  r.root = ref.root;
  r.prescale = ref.prescale;
  r.postscale = ref.postscale;
  r.shape = ref.shape;

  std::string detail;
  auto fail = [&](Code code, const std::string& what) {
    r.error_code = code;
    r.error = what;
    r.sizes.clear();
    return r;
  };
  const std::string op = OpTypeName(ref.type);
  const std::string tensor = "tensor '" + name + "'";
  if (Disagree(
          qs, [](const Request& q) { return std::string(OpTypeName(q.type)); }, &detail)) {
    return fail(Code::kMismatch, "Mismatched operations for " + tensor + ": " + detail);
  }
  if (Disagree(
          qs, [](const Request& q) { return std::string(DataTypeName(q.dtype)); }, &detail)) {
    return fail(Code::kMismatch, "Mismatched " + op + " dtypes for " + tensor + ": " + detail);
  }
  if (Disagree(
          qs, [](const Request& q) { return DeviceName(q.device).substr(0, 3); }, &detail)) {
    return fail(Code::kMismatch, "Mismatched " + op + " devices for " + tensor + ": " + detail);
  }
  if ((ref.type == OpType::kAllreduce || ref.type == OpType::kReducescatter) &&
      Disagree(
          qs, [](const Request& q) { return std::string(ReduceOpName(q.reduce_op)); }, &detail)) {
    return fail(Code::kMismatch, "Mismatched " + op + " reduce ops for " + tensor + ": " + detail);
  }
  if (Disagree(
          qs, [](const Request& q) { return Num(q.prescale) + "/" + Num(q.postscale); }, &detail)) {
    return fail(Code::kMismatch,
                "Mismatched " + op + " prescale/postscale factors for " + tensor + ": " + detail);
  }
  if (ref.type == OpType::kBroadcast &&
      Disagree(
          qs, [](const Request& q) { return std::to_string(q.root); }, &detail)) {
    return fail(Code::kMismatch, "Mismatched broadcast root ranks for " + tensor + ": " + detail);
  }
  if (Disagree(
          qs, [](const Request& q) { return q.group + "/" + std::to_string(q.group_size); },
          &detail)) {
    return fail(Code::kMismatch, "Mismatched groups for " + tensor + ": " + detail);
  }
  const bool rows_only = ref.type == OpType::kAllgather || ref.type == OpType::kAlltoall;
  auto shape_key = [rows_only](const Request& q) {
    if (!rows_only) return ShapeString(q.shape);
    if (q.shape.empty()) return std::string("scalar");
    std::vector<int64_t> rest(q.shape.begin() + 1, q.shape.end());
    return "[*" + (rest.empty() ? std::string() : ", " + ShapeString(rest).substr(1));
  };
  if (Disagree(qs, shape_key, &detail)) {
    return fail(Code::kMismatch, std::string("Mismatched ") + op + " tensor shapes" +
                                     (rows_only ? " (beyond dimension 0)" : "") + " for " + tensor +
                                     ": " + detail);
  }
  // Joined ranks hold no entry for anything but allreduce (where they send
  // zeros), so everything else is refused until all ranks have joined.
  if (!joined_.empty() && ref.type != OpType::kAllreduce) {
    std::vector<int> j(joined_.begin(), joined_.end());
    return fail(Code::kInvalidArgument, op + " of " + tensor + " cannot run while ranks " +
                                            RankList(j) +
                                            " have joined (only allreduce supports join)");
  }

  switch (ref.type) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReducescatter:
      r.sizes = {ref.NumElements()};
      r.joined_ranks.assign(joined_.begin(), joined_.end());
      break;
    case OpType::kAllgather: {
      r.sizes.assign(1 + static_cast<size_t>(size_), 0);
      r.sizes[0] = RowElements(ref.shape);
      for (const auto& q : qs) r.sizes[1 + q.rank] = q.shape.empty() ? 1 : q.shape[0];
      break;
    }
    case OpType::kAlltoall: {
      r.sizes.assign(1 + static_cast<size_t>(size_) * size_, 0);
      r.sizes[0] = RowElements(ref.shape);
      for (const auto& q : qs) {
        for (int d = 0; d < size_; ++d) {
          int64_t rows = q.splits.empty() ? (q.shape.empty() ? 0 : q.shape[0] / size_)
                                          : q.splits[static_cast<size_t>(d)];
          r.sizes[1 + static_cast<size_t>(q.rank) * size_ + d] = rows;
        }
      }
      break;
    }
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:
      if (Disagree(
              qs,
              [](const Request& q) {
                std::vector<int64_t> v(q.set_ranks.begin(), q.set_ranks.end());
                return ShapeString(v);
              },
              &detail)) {
        return fail(Code::kMismatch, "Mismatched process set ranks for " + tensor + ": " + detail);
      }
      r.set_ranks = ref.set_ranks;
      break;
    default:
      break;
  }
  return r;
}

bool Controller::StaleHits() {
  if (config_.stall_check_seconds <= 0 || config_.stall_check_disabled) return false;
  for (auto it = demoted_.begin(); it != demoted_.end();) {
    it = outstanding_.count(*it) ? std::next(it) : demoted_.erase(it);
  }
  if (!demoted_.empty()) return true;
  // Half the stall time: a rank that is merely slow has usually caught up by
  // then. The coordinator's clock starts when the moved request reaches it,
  // so a stalled cached tensor is reported after 1.5x the stall time.
  if (num_hits_ == 0) return false;
  const auto limit = std::chrono::duration<double>(config_.stall_check_seconds / 2);
  const auto now = Clock::now();
  for (const auto& h : hits_) {
    if (h.pending && now - h.since >= limit) return true;
  }
  return false;
}

void Controller::CheckStalls(ResponseList* out) {
  auto now = Clock::now();
  double check = config_.stall_check_seconds;
  // Look a few times per stall period, never more than once a second.
  auto every = std::chrono::duration<double>(std::min(1.0, check / 4));
  if (now - last_stall_check_ < every) return;
  last_stall_check_ = now;
  std::string report;
  for (const auto& name : arrival_order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    Pending& p = it->second;
    double age = std::chrono::duration<double>(now - p.first_seen).count();
    if (age < check) continue;
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (!p.seen[r] && !joined_.count(r)) missing.push_back(r);
    }
    std::string line = "'" + name + "' (" + OpTypeName(p.requests.front().type) + ", waiting " +
                       std::to_string(static_cast<int>(age)) + " s for ranks " + RankList(missing) +
                       ")";
    if (config_.stall_shutdown_seconds > 0 && age >= config_.stall_shutdown_seconds) {
      Response r;
      r.type = p.requests.front().type;
      r.names = {name};
      r.error_code = Code::kTimeout;
      r.error = "stalled: tensor " + line +
                " exceeded HVD_STALL_SHUTDOWN_TIME_SECONDS=" + Num(config_.stall_shutdown_seconds);
      HVD_LOG(kError) << r.error;
      out->responses.push_back(std::move(r));
      table_.erase(it);
      continue;
    }
    if (!p.warned) {
      report += (report.empty() ? "" : ", ") + line;
      p.warned = true;
    }
  }
  if (!report.empty()) {
    HVD_LOG(kWarning) << "Stall detected in process set " << set_id_
                      << ": some ranks submitted tensors others have not for more than "
                      << Num(check) << " s (HVD_STALL_CHECK_TIME_SECONDS): " << report
                      << ". This usually means ranks submit different tensors or one rank "
                         "stopped calling hvd.";
  }
}

}  // namespace hvd
