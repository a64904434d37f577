// libFuzzer target: everything the rendezvous client and server do with a
// raw TCP byte stream before a message reaches DecodeMessage — frame
// splitting (ExtractFrame), the server's hello (DecodeHello), authenticated
// bodies (OpenBody) and hex secrets (HexDecode).
//
// The first input byte picks a mode so one target covers them all. In mode
// 3 the harness seals the rest of the input itself with a known secret, so
// the fuzzer gets past the MAC and reaches the counter and message checks
// (with a random MAC it would almost never get past authentication).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/rendezvous/kv_protocol.h"

namespace rdv = hvd::rendezvous;

namespace {

const std::string kSecret = "fuzz-secret";
const std::string kSession(2 * rdv::kNonceBytes, 's');

void Frames(const std::string& stream) {
  size_t offset = 0;
  std::string body;
  while (true) {
    const size_t before = offset;
    rdv::FrameStatus st = rdv::ExtractFrame(stream, &offset, &body);
    if (st != rdv::FrameStatus::kFrame) break;
    if (offset <= before || offset > stream.size()) __builtin_trap();
    if (body.empty() || body.size() > rdv::kMaxFrameBytes) __builtin_trap();
    rdv::Message m;
    (void)rdv::OpenBody(kSecret, kSession, rdv::Direction::kToServer, 1, body, &m);
  }
}

// Input = counter (8 bytes, little-endian) | message. The MAC function is
// private to kv_protocol.cc, so the harness can only seal what SealBody
// accepts: a decoded message. That still drives OpenBody's MAC, counter and
// direction checks and the decoder behind them with fuzzer-chosen content.
void Sealed(const std::string& rest) {
  if (rest.size() < 8) return;
  rdv::Message m;
  const auto* p = reinterpret_cast<const uint8_t*>(rest.data()) + 8;
  if (!rdv::DecodeMessage(p, rest.size() - 8, &m).ok()) return;
  uint64_t counter = 0;
  for (int i = 0; i < 8; ++i) counter |= uint64_t{static_cast<uint8_t>(rest[i])} << (8 * i);
  const std::string sealed =
      rdv::SealBody(kSecret, kSession, rdv::Direction::kToClient, counter, m);
  rdv::Message out;
  hvd::Status s =
      rdv::OpenBody(kSecret, kSession, rdv::Direction::kToClient, counter, sealed, &out);
  if (!s.ok()) __builtin_trap();
  if (rdv::EncodeMessage(out) != rdv::EncodeMessage(m)) __builtin_trap();
  // The wrong direction or counter must be refused.
  if (rdv::OpenBody(kSecret, kSession, rdv::Direction::kToServer, counter, sealed, &out).ok()) {
    __builtin_trap();
  }
  if (rdv::OpenBody(kSecret, kSession, rdv::Direction::kToClient, counter + 1, sealed, &out).ok()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Frames(rest);
      break;
    case 1: {
      std::string nonce;
      if (rdv::DecodeHello(rest, &nonce).ok() && nonce.size() != rdv::kNonceBytes) {
        __builtin_trap();
      }
      break;
    }
    case 2: {
      std::string bytes;
      if (rdv::HexDecode(rest, &bytes).ok() && rdv::HexEncode(bytes).size() != rest.size()) {
        __builtin_trap();
      }
      break;
    }
    default:
      Sealed(rest);
      break;
  }
  return 0;
}
