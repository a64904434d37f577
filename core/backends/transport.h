// Which transport a Comm runs on: what the data plane (core/dataplane/)
// decides by, instead of comparing backend names. Header only and free of
// other includes, so hvdrun --explain can name transports too.
#pragma once

namespace hvd {

enum class Transport { kOther, kMpi, kGloo, kNccl };

// Lower-case name for plans and messages: "mpi", "gloo", "nccl", "other".
inline const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kMpi:
      return "mpi";
    case Transport::kGloo:
      return "gloo";
    case Transport::kNccl:
      return "nccl";
    case Transport::kOther:
      break;
  }
  return "other";
}

}  // namespace hvd
