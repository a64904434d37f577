// libFuzzer target: hvd::DecodeDecision, which every member runs on what
// its coordinator sends. Decoded decisions must round-trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/coordination/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  hvd::Decision d;
  if (!hvd::DecodeDecision(bytes, &d).ok()) return 0;
  const std::string again = hvd::EncodeDecision(d);
  hvd::Decision d2;
  if (!hvd::DecodeDecision(again, &d2).ok()) __builtin_trap();
  if (hvd::EncodeDecision(d2) != again) __builtin_trap();
  return 0;
}
