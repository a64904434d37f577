// libFuzzer target: hvd::DecodeRequestList, which the coordinator runs on
// bytes every other rank sends it. Besides "never crash", a decoded list
// must survive an encode/decode round trip unchanged, so the decoder cannot
// accept something the encoder would write differently.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/coordination/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  hvd::RequestList list;
  if (!hvd::DecodeRequestList(bytes, &list).ok()) return 0;
  const std::string again = hvd::EncodeRequestList(list);
  hvd::RequestList list2;
  if (!hvd::DecodeRequestList(again, &list2).ok()) __builtin_trap();
  if (hvd::EncodeRequestList(list2) != again) __builtin_trap();
  // What the coordinator does with a request before validating it further.
  for (const auto& q : list2.requests) (void)q.SameParams(list2.requests.front());
  return 0;
}
