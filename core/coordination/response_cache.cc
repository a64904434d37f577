#include "core/coordination/response_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

namespace hvd {

ResponseCache::ParamsKey ResponseCache::Pack(const Request& q) {
  ParamsKey k{};
  const bool packs = q.shape.size() <= 4 && q.splits.empty() && q.group.empty() &&
                     q.group_size == 0 && !std::isnan(q.prescale) && !std::isnan(q.postscale);
  if (!packs) {
    k[0] = kNotPacked;
    return k;
  }
  k[0] = static_cast<uint64_t>(q.type) | static_cast<uint64_t>(q.dtype) << 8 |
         static_cast<uint64_t>(q.reduce_op) << 16 | static_cast<uint64_t>(q.device.kind) << 24 |
         static_cast<uint64_t>(static_cast<uint32_t>(q.device.id)) << 32;
  k[1] = static_cast<uint32_t>(q.root) | static_cast<uint64_t>(q.shape.size()) << 32;
  // + 0.0 turns -0.0 into 0.0, which == treats as equal.
  const double scales[2] = {q.prescale + 0.0, q.postscale + 0.0};
  std::memcpy(&k[2], scales, sizeof(scales));
  for (size_t i = 0; i < q.shape.size(); ++i) k[4 + i] = static_cast<uint64_t>(q.shape[i]);
  return k;
}

ResponseCache::ResponseCache(int capacity, int max_capacity)
    : capacity_(capacity),
      max_capacity_(max_capacity > capacity ? max_capacity : capacity),
      slots_(capacity),
      keys_(static_cast<size_t>(capacity)),
      names_(static_cast<size_t>(capacity)),
      marks_(static_cast<size_t>(capacity), 0) {
  max_ghosts_ = std::max<size_t>(4 * static_cast<size_t>(std::max(capacity, 0)),
                                 static_cast<size_t>(max_capacity_));
  for (int i = 0; i < capacity; ++i) free_.insert(i);
}

ResponseCache::State ResponseCache::Lookup(const Request& request, int* position) const {
  const int pos = by_name_.Find(request.name);
  if (pos < 0) return State::kMiss;
  *position = pos;
  const ParamsKey& cached = keys_[pos];
  const bool same =
      cached[0] != kNotPacked ? cached == Pack(request) : slots_[pos].request.SameParams(request);
  return same ? State::kHit : State::kInvalid;
}

int ResponseCache::Find(const std::string& name) const {
  return by_name_.Find(name);
}

int ResponseCache::Put(const Response& response, const Request& request, int* evicted) {
  *evicted = -1;
  if (capacity_ == 0) return -1;
  const int old = by_name_.Find(request.name);
  if (old >= 0) Erase(old);
  const bool recurring = ghosts_.erase(std::hash<std::string>()(request.name)) > 0;
  recurring_this_lap_ += recurring ? 1 : 0;
  // Grows on sustained pressure only: an eighth of the slots' worth of
  // returning tensors within one lap of the hand, not the odd reused name
  // that a stream of names used once pushed out.
  if (free_.empty() && recurring && capacity_ < max_capacity_ &&
      recurring_this_lap_ >= std::max(1, capacity_ / 8)) {
    recurring_this_lap_ = 0;
    Grow(capacity_ + 1);
  }
  if (free_.empty()) {
    const int pos = hand_;
    hand_ = (hand_ + 1) % capacity_;
    if (hand_ == 0) recurring_this_lap_ = 0;
    recurring_misses_ += recurring && capacity_ == max_capacity_ ? 1 : 0;
    uint8_t& mark = marks_[static_cast<size_t>(pos)];
    if (mark != 0) {
      mark = 0;
      AddGhost(request.name);
      return -1;
    }
    *evicted = pos;
    AddGhost(names_[static_cast<size_t>(pos)]);
    Erase(pos);
  }
  const int pos = *free_.begin();
  PutAt(pos, response, request);
  return pos;
}

void ResponseCache::PutAt(int pos, const Response& response, const Request& request) {
  if (pos < 0 || pos >= max_capacity_) return;
  if (pos >= capacity_) Grow(pos + 1);
  const int old = by_name_.Find(request.name);
  if (old >= 0) Erase(old);
  Erase(pos);
  free_.erase(pos);
  Slot& s = slots_[pos];
  s.used = true;
  s.response = std::make_shared<const Response>(response);
  s.request = request;
  keys_[pos] = Pack(request);
  ++generation_;
  names_[pos] = request.name;
  marks_[static_cast<size_t>(pos)] = 1;
  by_name_.Insert(pos);  // after names_[pos]: the index reads the name there
}

void ResponseCache::Touch(int position) {
  marks_[static_cast<size_t>(position)] = 1;
}

void ResponseCache::Grow(int at_least) {
  const int from = capacity_;
  while (capacity_ < at_least && capacity_ < max_capacity_) {
    capacity_ = capacity_ > max_capacity_ / 2 ? max_capacity_ : std::max(1, 2 * capacity_);
  }
  const auto n = static_cast<size_t>(capacity_);
  slots_.resize(n);
  keys_.resize(n);
  names_.resize(n);
  marks_.resize(n, 0);
  for (int i = from; i < capacity_; ++i) free_.insert(i);
}

void ResponseCache::AddGhost(const std::string& name) {
  if (ghost_order_.size() >= max_ghosts_) {
    const auto& [oldest, seq] = ghost_order_.front();
    auto it = ghosts_.find(oldest);
    if (it != ghosts_.end() && it->second == seq) ghosts_.erase(it);
    ghost_order_.pop_front();
  }
  const uint64_t h = std::hash<std::string>()(name);
  ghosts_[h] = ++ghost_seq_;
  ghost_order_.emplace_back(h, ghost_seq_);
}

void ResponseCache::Erase(int position) {
  if (!used(position)) return;
  Slot& s = slots_[position];
  by_name_.Remove(names_[position]);
  names_[position].clear();
  s = Slot();
  ++generation_;
  free_.insert(position);
}

}  // namespace hvd
