// Tensor fusion: packs responses that can run as one collective (same op,
// dtype, device, reduce op and scale factors) into one fused response, up to
// a byte threshold. A pure function of its input, so every rank, given the
// same response list, fuses identically.
#pragma once

#include <cstdint>
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
