// libFuzzer target: hvd::DecodeReport, which a coordinator runs on bytes
// every other member sends it. Besides "never crash", a decoded report must
// survive an encode/decode round trip unchanged, so the decoder cannot
// accept something the encoder would write differently.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/coordination/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  hvd::Report rep;
  if (!hvd::DecodeReport(bytes, &rep).ok()) return 0;
  const std::string again = hvd::EncodeReport(rep);
  hvd::Report rep2;
  if (!hvd::DecodeReport(again, &rep2).ok()) __builtin_trap();
  if (hvd::EncodeReport(rep2) != again) __builtin_trap();
  // What the coordinator does with a request before validating it further.
  for (const auto& q : rep2.requests) (void)q.SameParams(rep2.requests.front());
  return 0;
}
