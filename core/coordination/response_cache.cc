#include "core/coordination/response_cache.h"

namespace hvd {

ResponseCache::ResponseCache(int capacity) : capacity_(capacity), slots_(capacity) {
  for (int i = 0; i < capacity; ++i) free_.insert(i);
}

ResponseCache::State ResponseCache::Lookup(const Request& request, int* position) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return State::kMiss;
  *position = it->second;
  return slots_[it->second].request.SameParams(request) ? State::kHit : State::kInvalid;
}

int ResponseCache::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int ResponseCache::Put(const Response& response, const Request& request, int* evicted) {
  *evicted = -1;
  if (capacity_ == 0) return -1;
  auto it = by_name_.find(request.name);
  if (it != by_name_.end()) Erase(it->second);
  if (free_.empty()) {
    *evicted = lru_.back();
    Erase(*evicted);
  }
  const int pos = *free_.begin();
  PutAt(pos, response, request);
  return pos;
}

void ResponseCache::PutAt(int pos, const Response& response, const Request& request) {
  if (pos < 0 || pos >= capacity_) return;
  auto it = by_name_.find(request.name);
  if (it != by_name_.end()) Erase(it->second);
  Erase(pos);
  free_.erase(pos);
  Slot& s = slots_[pos];
  s.used = true;
  s.response = std::make_shared<const Response>(response);
  s.request = request;
  lru_.push_front(pos);
  s.lru = lru_.begin();
  by_name_[request.name] = pos;
}

void ResponseCache::Touch(int position) {
  Slot& s = slots_[position];
  lru_.splice(lru_.begin(), lru_, s.lru);
}

void ResponseCache::Erase(int position) {
  if (!used(position)) return;
  Slot& s = slots_[position];
  by_name_.erase(s.request.name);
  lru_.erase(s.lru);
  s = Slot();
  free_.insert(position);
}

}  // namespace hvd
