// What ranks tell the coordinator (Request) and what it answers (Response),
// with their wire encodings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

// One rank's wish to run one collective on one tensor. A new field must
// also go into Swap and Reset (the queue's pooled entries use them).
struct Request {
  int32_t rank = 0;  // rank within the process set
  int32_t process_set = 0;
  OpType type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  Device device;
  int32_t root = 0;  // broadcast
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<int64_t> shape;
  std::string name;
  std::vector<int32_t> splits;  // alltoall: rows for each destination
  std::string group;            // grouped allreduce: all members run together
  int32_t group_size = 0;
  std::vector<int32_t> set_ranks;  // add_process_set

  int64_t NumElements() const;
  // Equal in everything a cached response depends on.
  bool SameParams(const Request& o) const;
  // std::swap without the three moves (a tensor's submission swaps once).
  void Swap(Request& o) noexcept;
  // Back to the defaults, keeping the containers' memory for reuse.
  void Reset();
};

// The coordinator's decision for one tensor (or, after fusion, several).
struct Response {
  OpType type = OpType::kAllreduce;
  std::vector<std::string> names;
  Code error_code = Code::kOk;  // non-OK: the op fails on every rank with `error`
  std::string error;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  Device device;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  // Per tensor, in names order (fusion concatenates the tensors' runs):
  //  allreduce/broadcast/reducescatter: its element count (one entry);
  //  allgather: the elements of one row (dims 1..n multiplied), then dim 0
  //    of every rank of the set (1 + size entries);
  //  alltoall (never fused): the elements of one row, then the size x size
  //    matrix of rows sent, row = sender, column = receiver (1 + size^2).
  std::vector<int64_t> sizes;
  std::vector<int64_t> shape;  // single-tensor shape (for joined ranks and results)
  std::vector<int32_t> joined_ranks;
  std::vector<int32_t> set_ranks;  // add_process_set
  int32_t last_joined = -1;        // join: the rank that joined last
};

// Responses are shared, not copied, between the response cache and a cycle's
// output: a steady-state cycle hands on hundreds of cached ones.
using ResponsePtr = std::shared_ptr<const Response>;

// Wire encodings (coordination/protocol.h frames them into messages).
void EncodeRequest(const Request& q, class WireWriter* w);
bool DecodeRequest(class WireReader* r, Request* out);
void EncodeResponse(const Response& r, class WireWriter* w);
bool DecodeResponse(class WireReader* r, Response* out);

std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace hvd
