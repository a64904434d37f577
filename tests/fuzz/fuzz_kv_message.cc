// libFuzzer target: the rendezvous server's message decoder
// (hvd::rendezvous::DecodeMessage). The server faces the network, so this
// is the decoder an attacker without the secret could reach first if the
// MAC check were ever skipped; it must reject, never crash, and whatever it
// accepts must round-trip through EncodeMessage.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/rendezvous/kv_protocol.h"

using hvd::rendezvous::DecodeMessage;
using hvd::rendezvous::EncodeMessage;
using hvd::rendezvous::Message;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Message m;
  if (!DecodeMessage(data, size, &m).ok()) return 0;
  (void)hvd::rendezvous::MsgTypeName(m.type);
  const std::string again = EncodeMessage(m);
  if (again != std::string(reinterpret_cast<const char*>(data), size)) __builtin_trap();
  Message m2;
  if (!DecodeMessage(reinterpret_cast<const uint8_t*>(again.data()), again.size(), &m2).ok()) {
    __builtin_trap();
  }
  return 0;
}
