#include "core/coordination/negotiator.h"

#include <algorithm>

namespace hvd {

Negotiator::Negotiator(int cache_capacity, int cache_capacity_max)
    : cache_(cache_capacity, cache_capacity_max),
      hits_(static_cast<size_t>(std::max(0, cache_capacity)), nullptr) {}

bool Negotiator::Cacheable(OpType t) {
  return t == OpType::kAllreduce || t == OpType::kAllgather || t == OpType::kBroadcast ||
         t == OpType::kAlltoall || t == OpType::kReducescatter;
}

void Negotiator::Add(const std::vector<const Request*>& requests) {
  for (const Request* q : requests) {
    int pos = -1;
    const auto state = cache_.capacity() > 0 && Cacheable(q->type) ? cache_.Lookup(*q, &pos)
                                                                   : ResponseCache::State::kMiss;
    if (state == ResponseCache::State::kHit && hits_[static_cast<size_t>(pos)] == nullptr) {
      hits_[static_cast<size_t>(pos)] = q;
      ++pending_hits_;
      report_.hits.push_back(pos);
      continue;
    }
    if (state == ResponseCache::State::kInvalid) report_.invalid.push_back(pos);
    report_.requests.push_back(*q);
    outstanding_[q->name] = q;
  }
}

void Negotiator::Renegotiate(const Request* q) {
  report_.requests.push_back(*q);
  outstanding_[q->name] = q;
}

bool Negotiator::TakeReport(Report* out) {
  if (report_.empty()) return false;
  report_.epoch = epoch_;
  *out = std::move(report_);
  report_ = Report();
  return true;
}

bool Negotiator::OnlyCached(const Decision& d) {
  return d.actions.size() == 1 && d.actions[0].kind == Action::kRunCached &&
         d.actions[0].ranks.empty();
}

void Negotiator::ClearHits(const std::vector<int32_t>& slots) {
  for (int32_t slot : slots) {
    const Request*& mine = hits_[static_cast<size_t>(slot)];
    if (mine != nullptr) {
      mine = nullptr;
      --pending_hits_;
    }
  }
}

Status Negotiator::RunCached(int64_t seq, const Action& a, Applied* out) {
  out->runs.reserve(out->runs.size() + a.slots.size());
  for (int32_t slot : a.slots) {
    if (!cache_.used(slot)) {
      return Status::Internal("negotiation: decision " + std::to_string(seq) + " runs cache slot " +
                              std::to_string(slot) + ", which this rank does not hold");
    }
    ResponsePtr r = cache_.response(slot);
    if (!a.ranks.empty()) {  // joined ranks contribute zeros
      auto copy = std::make_shared<Response>(*r);
      copy->joined_ranks = a.ranks;
      r = std::move(copy);
    }
    out->runs.push_back(std::move(r));
  }
  ClearHits(a.slots);
  return Status::OK();
}

Status Negotiator::Apply(const Decision& d, Applied* out) {
  const bool only_cached = OnlyCached(d);
  if (only_cached && !last_slots_.empty() && cache_.generation() == last_generation_ &&
      d.actions[0].slots == last_slots_) {
    // The slots were checked when they last ran and none changed since.
    ClearHits(last_slots_);
    out->repeat = true;
    epoch_ = d.seq;
    return Status::OK();
  }
  for (const Action& a : d.actions) {
    switch (a.kind) {
      case Action::kRunCached:
        HVD_RETURN_IF_ERROR(RunCached(d.seq, a, out));
        break;
      case Action::kRun: {
        const std::string& name = a.response.names.empty() ? std::string() : a.response.names[0];
        auto it = outstanding_.find(name);
        ResponsePtr run;  // the cached copy when there is one: not copied twice
        if (it != outstanding_.end()) {
          if (a.slot >= 0) {
            cache_.PutAt(a.slot, a.response, *it->second);
            hits_.resize(std::max(hits_.size(), static_cast<size_t>(cache_.capacity())), nullptr);
            if (cache_.used(a.slot)) run = cache_.response(a.slot);
          }
          outstanding_.erase(it);
        } else {
          // An error for a tensor this rank holds as a cache hit (stalled,
          // or refused while ranks are joined).
          const int slot = cache_.Find(name);
          if (slot >= 0 && hits_[static_cast<size_t>(slot)] != nullptr) {
            hits_[static_cast<size_t>(slot)] = nullptr;
            --pending_hits_;
          }
        }
        out->runs.push_back(run ? std::move(run) : std::make_shared<const Response>(a.response));
        break;
      }
      case Action::kErase: {
        if (a.slot < 0 || a.slot >= cache_.capacity()) break;
        cache_.Erase(a.slot);
        const Request*& mine = hits_[static_cast<size_t>(a.slot)];
        if (mine != nullptr) {
          Renegotiate(mine);
          mine = nullptr;
          --pending_hits_;
        }
        break;
      }
      case Action::kParams:
        out->params_changed = true;
        out->params = a.params;
        break;
      case Action::kShutdown:
        out->shutdown = true;
        out->shutdown_ranks = a.ranks;
        break;
      case Action::kPeerLost:
        out->lost = Status::PeerLost(a.error);
        break;
      default:
        break;
    }
  }
  if (!out->runs.empty()) {
    if (only_cached) {
      last_slots_ = d.actions[0].slots;
    } else {
      last_slots_.clear();
    }
    last_generation_ = cache_.generation();
  }
  epoch_ = d.seq;
  return Status::OK();
}

}  // namespace hvd
