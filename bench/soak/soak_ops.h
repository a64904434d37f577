// The soak's collectives: a plan every rank draws identically from the
// shared seed (OpSpec), and its execution on one rank (RunningOp) with the
// exact check of the result against values computed locally.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "bench/soak/soak_data.h"

namespace soak {

enum class Kind { kAllreduce, kGrouped, kAllgather, kBroadcast, kAlltoall, kReducescatter };
constexpr int kKinds = 6;
const char* KindName(Kind k);

// Largest input or output of one collective (all tensors of a group together).
constexpr int64_t kMaxOpBytes = int64_t{8} << 20;

struct TensorSpec {
  std::string name;
  const Dtype* dtype = nullptr;
  std::vector<int64_t> shape;  // allreduce, broadcast: the shape; others: {rows, cols} or {rows}
  int64_t elems() const;
};

// One collective, identical on every rank.
struct OpSpec {
  Kind kind = Kind::kAllreduce;
  uint64_t key = 0;                 // seeds the tensor contents
  int32_t set = 0;                  // process set id
  std::vector<int> members;         // global ranks in set-rank order (ascending)
  std::vector<int> joined;          // global ranks that joined: they contribute zeros
  std::vector<TensorSpec> tensors;  // a group has several, the rest one
  hvd_reduce_op op = HVD_OP_SUM;
  double prescale = 1, postscale = 1;
  bool in_place = true;                      // allreduce: output is the input tensor
  int root = 0;                              // broadcast: set rank
  std::vector<int64_t> rows;                 // allgather: rows of each set rank
  std::vector<std::vector<int32_t>> splits;  // alltoall: [src][dst] rows, set ranks
  bool equal_splits = false;                 // alltoall with splits == NULL
  bool use_allocator = false;  // allgather/alltoall/reducescatter result in our memory
  int64_t cols = 1;            // allgather/alltoall/reducescatter: row length
  int ndim = 1;                //   and whether rows are 1-D ({rows}) or 2-D

  int SetRankOf(int global_rank) const;  // -1: not a member
};

// Draws OpSpecs. Every rank holds one with the same seed and calls it in the
// same order, so all ranks agree on every collective without talking.
class Planner {
 public:
  Planner(uint64_t seed, int world_size);
  // `members`: the set's ranks; `joined`: ranks that contribute zeros (only
  // allreduces are drawn then); `taken`: names in flight in this set.
  OpSpec Draw(int32_t set, const std::vector<int>& members, const std::vector<int>& joined,
              std::vector<std::string>* taken);
  std::mt19937_64& rng() { return rng_; }
  uint64_t Uniform(uint64_t n) { return rng_() % n; }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

 private:
  std::string Name(std::vector<std::string>* taken);
  const Dtype* PickDtype();
  int64_t PickBytes(int64_t budget);
  std::vector<int64_t> PickShape(int64_t elems);

  std::mt19937_64 rng_;
  int world_size_;
  std::vector<std::string> pool_;  // names reused across rounds (response cache churn)
  uint64_t next_key_ = 1;
};

// Preallocated memory for one in-flight collective, touched once at start so
// the soak's own footprint does not move the RSS it measures.
struct Slot {
  Slot();
  std::vector<unsigned char> in, out;
};

// One collective submitted on this rank, checked on completion.
class RunningOp {
 public:
  RunningOp(const OpSpec* spec, Slot* slot, int rank);
  // Fills the inputs and submits; false with *error set on failure.
  bool Submit(std::string* error);
  hvd_handle handle() const { return handle_; }
  const OpSpec& spec() const { return *spec_; }
  // After a successful wait: true when the result is exact; else *error
  // names the first wrong element.
  bool Check(std::string* error);

 private:
  double InputValue(int tensor, int global_rank, int64_t i) const;
  double ExpectedReduce(int tensor, int64_t i) const;
  bool CheckAllreduce(std::string* error);
  bool CheckAllgather(const DLTensor& r, std::string* error);
  bool CheckBroadcast(std::string* error);
  bool CheckAlltoall(const DLTensor& r, std::string* error);
  bool CheckReducescatter(const DLTensor& r, std::string* error);

  const OpSpec* spec_;
  Slot* slot_;
  int rank_;
  int set_rank_;
  hvd_handle handle_ = 0;
  std::vector<std::vector<int64_t>> shapes_;  // DLTensor shapes point here
  std::vector<DLTensor> inputs_, outputs_;
  std::vector<size_t> offsets_;  // of each tensor in the slot's buffers
};

}  // namespace soak
