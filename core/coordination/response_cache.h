// Remembers the responses of tensors negotiated before, so that a training
// loop's repeated tensors are agreed on by cache slot instead of a full
// request. The coordinator owns the slot assignment (least recently used
// eviction); every member mirrors it by applying the coordinator's
// Put/Erase decisions, so slot numbers mean the same tensor everywhere.
#pragma once

#include <list>
#include <set>
#include <string>
#include <vector>

#include "core/common/name_index.h"
#include "core/coordination/message.h"

namespace hvd {

class ResponseCache {
 public:
  enum class State { kMiss, kHit, kInvalid };

  explicit ResponseCache(int capacity);
  // The name index refers to this object's slots.
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  int capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }

  // kHit: same name and parameters as cached (slot in *position);
  // kInvalid: same name, different parameters (the slot must be evicted).
  State Lookup(const Request& request, int* position) const;
  // The slot holding `name`, or -1.
  int Find(const std::string& name) const;
  // Coordinator: caches a single-tensor response under the request's name in
  // a free slot, evicting the least recently used one when full (its slot
  // in *evicted, else -1). Returns the slot.
  int Put(const Response& response, const Request& request, int* evicted);
  // Member: caches at the slot the coordinator chose (with this rank's own
  // request, which its later lookups compare against).
  void PutAt(int position, const Response& response, const Request& request);
  const ResponsePtr& response(int position) const { return slots_[position].response; }
  const Request& request(int position) const { return slots_[position].request; }
  bool used(int position) const {
    return position >= 0 && position < capacity_ && slots_[position].used;
  }
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
  struct SlotName {
    const std::vector<Slot>* slots;
    std::string_view operator()(int pos) const { return (*slots)[pos].request.name; }
  };
  NameIndex<int, -1, SlotName> by_name_{SlotName{&slots_}};
  std::list<int> lru_;  // front = most recently used
  std::set<int> free_;  // lowest free slot first
};

}  // namespace hvd
