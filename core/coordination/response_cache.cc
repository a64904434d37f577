#include "core/coordination/response_cache.h"

namespace hvd {

ResponseCache::ResponseCache(int capacity) : capacity_(capacity), slots_(capacity) {
  for (int i = 0; i < capacity; ++i) free_.insert(i);
}

ResponseCache::State ResponseCache::Lookup(const Request& request, int* position) const {
  const int pos = by_name_.Find(request.name);
  if (pos < 0) return State::kMiss;
  *position = pos;
  return slots_[pos].request.SameParams(request) ? State::kHit : State::kInvalid;
}

int ResponseCache::Find(const std::string& name) const {
  return by_name_.Find(name);
}

int ResponseCache::Put(const Response& response, const Request& request, int* evicted) {
  *evicted = -1;
  if (capacity_ == 0) return -1;
  const int old = by_name_.Find(request.name);
  if (old >= 0) Erase(old);
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
  const int old = by_name_.Find(request.name);
  if (old >= 0) Erase(old);
  Erase(pos);
  free_.erase(pos);
  Slot& s = slots_[pos];
  s.used = true;
  s.response = std::make_shared<const Response>(response);
  s.request = request;
  lru_.push_front(pos);
  s.lru = lru_.begin();
  by_name_.Insert(pos);  // after s.request: the index reads the name there
}

void ResponseCache::Touch(int position) {
  Slot& s = slots_[position];
  lru_.splice(lru_.begin(), lru_, s.lru);
}

void ResponseCache::Erase(int position) {
  if (!used(position)) return;
  Slot& s = slots_[position];
  by_name_.Remove(s.request.name);
  lru_.erase(s.lru);
  s = Slot();
  free_.insert(position);
}

}  // namespace hvd
