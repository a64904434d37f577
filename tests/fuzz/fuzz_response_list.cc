// libFuzzer target: hvd::DecodeResponseList, which every rank runs on the
// coordinator's broadcast. Decoded lists must round-trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/coordination/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  hvd::ResponseList list;
  if (!hvd::DecodeResponseList(bytes, &list).ok()) return 0;
  const std::string again = hvd::EncodeResponseList(list);
  hvd::ResponseList list2;
  if (!hvd::DecodeResponseList(again, &list2).ok()) __builtin_trap();
  if (hvd::EncodeResponseList(list2) != again) __builtin_trap();
  return 0;
}
