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

int ResponseCache::Put(const Response& response, const Request& request) {
  if (capacity_ == 0) return -1;
  auto it = by_name_.find(request.name);
  if (it != by_name_.end()) Erase(it->second);
  if (free_.empty()) Erase(lru_.back());
  int pos = *free_.begin();
  free_.erase(free_.begin());
  Slot& s = slots_[pos];
  s.used = true;
  s.response = std::make_shared<const Response>(response);
  s.request = request;
  lru_.push_front(pos);
  s.lru = lru_.begin();
  by_name_[request.name] = pos;
  return pos;
}

void ResponseCache::Touch(int position) {
  Slot& s = slots_[position];
  lru_.splice(lru_.begin(), lru_, s.lru);
}

void ResponseCache::Erase(int position) {
  Slot& s = slots_[position];
  if (!s.used) return;
  by_name_.erase(s.request.name);
  lru_.erase(s.lru);
  s = Slot();
  free_.insert(position);
}

}  // namespace hvd
