// Raw Gloo baseline for hvd_bench: a second Gloo context, built over the
// same hvdrun rendezvous store as hvd's Gloo backend (under its own key
// prefix), on which the bench calls gloo::allreduce directly - the same
// call (new API, default ring algorithm) that hvd's backend makes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace hvdbench {

class RawGloo {
 public:
  // Connects rank `rank` of `size` through HVD_RENDEZVOUS_ADDR/_PORT/_SECRET.
  // Gloo listens where hvd's backend would: HVD_GLOO_IFACE, else
  // HVD_GLOO_HOSTNAME, else the local address that routes to the
  // rendezvous server. Returns null and sets *why when it cannot.
  static std::unique_ptr<RawGloo> Create(int rank, int size, double timeout_seconds,
                                         std::string* why);
  virtual ~RawGloo() = default;

  // out[i] = sum over ranks of in[i], float32. Throws std::exception on a
  // Gloo error.
  virtual void AllreduceSum(const float* in, float* out, size_t count) = 0;
  virtual void Barrier() = 0;
};

}  // namespace hvdbench
