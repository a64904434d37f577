// Remembers the responses of tensors negotiated before, so that a training
// loop's repeated tensors are agreed on by one bit-vector allreduce instead
// of a trip through the coordinator. Every rank applies the same sequence of
// Put/Touch/Erase, so slot positions agree across ranks.
#pragma once

#include <list>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/coordination/message.h"

namespace hvd {

class ResponseCache {
 public:
  enum class State { kMiss, kHit, kInvalid };

  explicit ResponseCache(int capacity);

  int capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }

  // kHit: same name and parameters as cached (slot in *position);
  // kInvalid: same name, different parameters (the slot must be evicted).
  State Lookup(const Request& request, int* position) const;
  // Caches a single-tensor response with this rank's request; evicts the
  // least recently used slot when full. Returns the slot.
  int Put(const Response& response, const Request& request);
  const ResponsePtr& response(int position) const { return slots_[position].response; }
  const Request& request(int position) const { return slots_[position].request; }
  bool used(int position) const { return slots_[position].used; }
  void Touch(int position);
  void Erase(int position);

 private:
  struct Slot {
    bool used = false;
    ResponsePtr response;
    Request request;
    std::list<int>::iterator lru;
  };
  int capacity_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, int> by_name_;
  std::list<int> lru_;  // front = most recently used
  std::set<int> free_;  // lowest free slot first
};

}  // namespace hvd
