// Wire format of the rendezvous key-value store.
//
// A connection is a stream of frames: a 4-byte big-endian length followed by
// that many bytes of body, at most kMaxFrameBytes. The server speaks first:
//
//   server -> client  Hello   body = 'H' | version u32 | server nonce (16 B)
//   client -> server  Auth    sealed, counter 0, value = client nonce (16 B)
//   server -> client  AuthOk  sealed, counter 0   (or Refused, unsealed)
//   client -> server  request sealed, counter 1, 2, 3, ...
//   server -> client  reply   sealed, same counter as its request
//
// A sealed body is  counter u64 | message | HMAC-SHA256 (32 B)  where the MAC
// covers  session | direction | counter | message  with the job's secret as
// key. session = server nonce | client nonce, so a frame recorded on one
// connection is useless on another; the strictly increasing counter stops
// replay and reordering inside a connection; the direction byte stops a
// reply being reflected back as a request.
//
// Every decoder here is bounds-checked and returns a Status instead of
// trusting lengths from the wire: the server faces the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/status.h"

namespace hvd {
namespace rendezvous {

constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kMaxFrameBytes = 64u << 20;  // 64 MiB
// Before authentication only the auth frame (73 bytes) is legal, so a peer
// without the secret cannot make the server buffer more than this.
constexpr uint32_t kMaxAuthFrameBytes = 256;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxKeyBytes = 64u << 10;
constexpr uint32_t kMaxKeysPerMessage = 1u << 16;

enum class MsgType : uint8_t {
  kAuth = 1,
  kAuthOk = 2,
  kSet = 10,   // keys[0] = value
  kGet = 11,   // keys[0], integer = timeout ms (< 0: forever)
  kAdd = 12,   // keys[0] += integer
  kWait = 13,  // all keys, integer = timeout ms (< 0: forever)
  kOk = 20,
  kValue = 21,    // value
  kInt = 22,      // integer
  kTimeout = 23,  // keys = the keys still missing
  kError = 24,    // value = message
};

enum class Direction : uint8_t { kToServer = 'C', kToClient = 'S' };

// One request or reply. A single layout for every type keeps the decoder
// small: type u8 | nkeys u32 | (len u32 | bytes)* | vlen u32 | value | i64.
struct Message {
  MsgType type = MsgType::kOk;
  std::vector<std::string> keys;
  std::string value;
  int64_t integer = 0;
};

const char* MsgTypeName(MsgType type);

std::string EncodeMessage(const Message& msg);
// Rejects unknown types, truncation, trailing bytes and per-type shape errors
// (e.g. a Set without exactly one key, or a key longer than kMaxKeyBytes).
Status DecodeMessage(const uint8_t* data, size_t size, Message* out);

// Appends length prefix + body to out.
void AppendFrame(const std::string& body, std::string* out);

enum class FrameStatus { kNeedMore, kFrame, kTooLarge, kEmpty };
// Looks for one complete frame at the start of buffer[offset, end). On kFrame
// *body is set and *offset advanced past it. kTooLarge (longer than
// max_bytes) is reported as soon as the length prefix arrives, before the
// body is buffered.
FrameStatus ExtractFrame(const std::string& buffer, size_t* offset, std::string* body,
                         uint32_t max_bytes = kMaxFrameBytes);

std::string EncodeHello(const std::string& server_nonce);
Status DecodeHello(const std::string& body, std::string* server_nonce);

// Authenticated bodies (see the header comment).
std::string SealBody(const std::string& secret, const std::string& session, Direction dir,
                     uint64_t counter, const Message& msg);
// Verifies the MAC first (constant time) and only then the counter and the
// message, so unauthenticated bytes never reach the decoder's logic.
Status OpenBody(const std::string& secret, const std::string& session, Direction dir,
                uint64_t expected_counter, const std::string& body, Message* out);

// Cryptographically random bytes (OpenSSL RAND_bytes).
Status RandomBytes(size_t n, std::string* out);

std::string HexEncode(const std::string& bytes);
Status HexDecode(const std::string& hex, std::string* bytes);

}  // namespace rendezvous
}  // namespace hvd
