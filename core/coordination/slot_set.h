// A set of response-cache slots (which a rank has hit, which wait for the
// other ranks): a bitmap over the cache's capacity. Inserting and erasing cost a
// bit flip (no allocation, unlike a node-based set), and visiting in slot
// order costs a word per 64 slots, which the steady state does every cycle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hvd {

class SlotSet {
 public:
  explicit SlotSet(int capacity) : words_((static_cast<size_t>(capacity) + 63) / 64, 0) {}
  // Room for `capacity` slots, keeping the members.
  void Grow(int capacity) {
    words_.resize(std::max(words_.size(), (static_cast<size_t>(capacity) + 63) / 64), 0);
  }

  void Insert(int32_t slot) {
    uint64_t& w = words_[static_cast<size_t>(slot) / 64];
    const uint64_t bit = uint64_t{1} << (slot % 64);
    count_ += (w & bit) ? 0 : 1;
    w |= bit;
  }
  void Erase(int32_t slot) {
    uint64_t& w = words_[static_cast<size_t>(slot) / 64];
    const uint64_t bit = uint64_t{1} << (slot % 64);
    count_ -= (w & bit) ? 1 : 0;
    w &= ~bit;
  }
  bool Has(int32_t slot) const {
    return (words_[static_cast<size_t>(slot) / 64] >> (slot % 64)) & 1;
  }
  bool empty() const { return count_ == 0; }
  int size() const { return count_; }

  // Word access for whole-set operations: slots i*64 .. i*64+63.
  size_t words() const { return words_.size(); }
  uint64_t word(size_t i) const { return words_[i]; }
  // Erases the slots of `mask` in word i.
  void EraseWord(size_t i, uint64_t mask) {
    count_ -= __builtin_popcountll(words_[i] & mask);
    words_[i] &= ~mask;
  }

  // Calls f(slot) for every slot in ascending order; f may erase the slot
  // it is given (and no other).
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      for (uint64_t w = words_[i]; w != 0; w &= w - 1) {
        f(static_cast<int32_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(w))));
      }
    }
  }

 private:
  std::vector<uint64_t> words_;
  int count_ = 0;
};

}  // namespace hvd
