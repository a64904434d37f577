// Remembers the responses of tensors negotiated before, so that a training
// loop's repeated tensors are agreed on by cache slot instead of a full
// request. The coordinator owns the slot assignment; every member mirrors
// it by applying the coordinator's Put/Erase decisions, so slot numbers
// mean the same tensor everywhere.
//
// A full cache replaces slots by a clock with second chances, not by least
// recent use: a training step that submits more distinct tensors than there
// are slots, in the same order every step, would evict under LRU each slot
// just before its next hit and hit nothing (about 15x slower per tensor at
// 1500 tensors and 1024 slots). Here a new tensor takes the slot under the
// clock's hand only if that slot has had no hit and no fill since the hand
// last passed; otherwise the hand clears the slot's mark, moves on, and the
// new tensor stays uncached this time. Up to twice as many tensors as
// slots, the slots hit every step keep their place and only the overflow
// travels as full requests (beyond that the hand laps before the hits come
// back, and nothing is hit, as under LRU).
//
// Unless its size is fixed (HVD_CACHE_CAPACITY), the coordinator's cache
// also doubles, up to a maximum, when the tensors it turned away keep coming
// back: it remembers their names' hashes. Names used once never come back,
// so a stream of them (unnamed operations) does not make it grow.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/common/name_index.h"
#include "core/coordination/message.h"

namespace hvd {

class ResponseCache {
 public:
  enum class State { kMiss, kHit, kInvalid };

  // Starts with `capacity` slots; Put may grow it up to max_capacity (no
  // less than capacity) when tensors it turned away keep coming back.
  explicit ResponseCache(int capacity, int max_capacity = 0);
  // The name index refers to this object's slots.
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  int capacity() const { return capacity_; }
  int max_capacity() const { return max_capacity_; }
  size_t size() const { return by_name_.size(); }

  // kHit: same name and parameters as cached (slot in *position);
  // kInvalid: same name, different parameters (the slot must be evicted).
  State Lookup(const Request& request, int* position) const;
  // The slot holding `name`, or -1.
  int Find(const std::string& name) const;
  // Coordinator: caches a single-tensor response under the request's name in
  // a free slot or, when full, in the slot under the clock's hand if that
  // one is unmarked (its old tensor's slot in *evicted, else -1). When
  // tensors turned away before keep coming back to a full cache (an eighth
  // of its slots' worth within one lap of the hand), it doubles instead, up
  // to the maximum. Returns the slot, or -1 when the cache keeps its slots
  // this time (see above).
  int Put(const Response& response, const Request& request, int* evicted);
  // Member: caches at the slot the coordinator chose (with this rank's own
  // request, which its later lookups compare against), growing as the
  // coordinator's cache grew.
  void PutAt(int position, const Response& response, const Request& request);
  const ResponsePtr& response(int position) const { return slots_[position].response; }
  const Request& request(int position) const { return slots_[position].request; }
  bool used(int position) const {
    return position >= 0 && position < capacity_ && slots_[position].used;
  }
  // A hit: marks the slot, so that the clock passes it once.
  void Touch(int position);
  void Erase(int position);
  // Puts, at the maximum capacity, of tensors the cache had refused or
  // evicted not long before (among the last max_ghosts_ such names):
  // tensors that recur outnumber the slots. Names used once (a counter in
  // the name, unnamed operations) never count.
  int64_t recurring_misses() const { return recurring_misses_; }
  // Changes whenever a slot is filled or emptied: equal generations mean
  // every slot holds the same response as before.
  uint64_t generation() const { return generation_; }

 private:
  struct Slot {
    bool used = false;
    ResponsePtr response;
    Request request;
  };
  // A request's parameters (what SameParams compares) packed exactly into
  // eight words, when they fit: up to four dimensions, no splits, no group.
  // A lookup per submitted tensor then compares one dense line instead of
  // reading a slot's request and its shape's allocation, both cold after a
  // step's other work. keys_[pos][0] == kNotPacked: compare the request.
  using ParamsKey = std::array<uint64_t, 8>;
  static constexpr uint64_t kNotPacked = ~uint64_t{0};
  static ParamsKey Pack(const Request& q);

  int capacity_;
  int max_capacity_;
  std::vector<Slot> slots_;
  std::vector<ParamsKey> keys_;
  std::vector<std::string> names_;  // slots_[pos].request.name, densely for the index
  struct SlotName {
    const std::vector<std::string>* names;
    std::string_view operator()(int pos) const { return (*names)[pos]; }
  };
  NameIndex<int, -1, SlotName> by_name_{SlotName{&names_}};
  // Remembers `name` as refused or evicted, forgetting the oldest beyond
  // max_ghosts_.
  void AddGhost(const std::string& name);
  // Doubles the slots (at most to max_capacity_) until there are at least
  // `at_least`; the new ones are free. Coordinator and members double alike.
  void Grow(int at_least);

  // Per slot: set by a Put or a hit, cleared by the hand. Dense bytes, one
  // write per hit, where a list's nodes went cold.
  std::vector<uint8_t> marks_;
  int hand_ = 0;
  // Turned-away names, by hash -> the number of their entry in ghost_order_
  // (oldest first; an entry whose number no longer matches is stale). As
  // many as a step can turn away before its names come back: four times the
  // capacity, or the maximum capacity if larger.
  std::unordered_map<uint64_t, uint64_t> ghosts_;
  std::deque<std::pair<uint64_t, uint64_t>> ghost_order_;
  uint64_t ghost_seq_ = 0;
  int recurring_this_lap_ = 0;  // returning tensors since the hand last wrapped
  size_t max_ghosts_ = 0;
  int64_t recurring_misses_ = 0;
  uint64_t generation_ = 0;
  std::set<int> free_;  // lowest free slot first
};

}  // namespace hvd
