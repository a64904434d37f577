// Tensor fusion: packs responses that can run as one collective (same op,
// dtype, device, reduce op and scale factors) into one fused response, up to
// a byte threshold. A pure function of its input, so every rank, given the
// same response list, fuses identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/coordination/message.h"

namespace hvd {

// Bytes one response moves through the fusion buffer (allgather: output).
int64_t ResponseBytes(const Response& r, int set_size);

// threshold_bytes == 0 disables fusion. Responses of solo_bytes or more
// are never fused (0: no such limit): copying a large tensor in and out of
// the buffer costs more than the separate collective it saves.
std::vector<Response> FuseResponses(const std::vector<ResponsePtr>& responses,
                                    int64_t threshold_bytes, int set_size, int64_t solo_bytes = 0);
std::vector<Response> FuseResponses(std::vector<Response> responses, int64_t threshold_bytes,
                                    int set_size, int64_t solo_bytes = 0);

// FuseResponses with a memory of its last call. A training loop's cached
// tensors come back every step as the same response objects (the response
// cache's) in the same order; fusing a thousand of them again reads three
// allocations per tensor and copies every name. Holding the last input keeps
// those objects alive, so the same pointers mean the same (const) responses.
// A step that does fuse anew (its decisions split differently) copies each
// name into a string of the last output, not into a new allocation.
class FusionMemo {
 public:
  // Takes *responses (left empty or with the previous input, to drop).
  const std::vector<Response>& Fuse(std::vector<ResponsePtr>* responses, int64_t threshold_bytes,
                                    int set_size, int64_t solo_bytes);
  // The last input again (Applied::repeat: the same cached responses),
  // under these settings.
  const std::vector<Response>& Repeat(int64_t threshold_bytes, int set_size, int64_t solo_bytes);
  // Names kept from the last output for the next (at most the larger of
  // the last output's and input's counts).
  size_t spare_names() const { return spare_names_.size(); }

 private:
  std::vector<ResponsePtr> in_;
  int64_t threshold_ = -1;
  int set_size_ = -1;
  int64_t solo_bytes_ = -1;
  std::vector<Response> out_;
  std::vector<std::string> spare_names_;  // out_'s names of the call before, for reuse
};

// A persistent, growable host buffer (one per process set), so a training
// loop does not allocate per step.
class FusionBuffer {
 public:
  void* Get(int64_t bytes);
  int64_t capacity() const { return static_cast<int64_t>(buf_.size()); }

 private:
  std::vector<uint8_t> buf_;
};

}  // namespace hvd
