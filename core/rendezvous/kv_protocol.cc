#include "core/rendezvous/kv_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

namespace hvd {
namespace rendezvous {

namespace {

void PutU32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xff));
}

void PutU64(uint64_t v, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xff));
}

void PutBytes(const std::string& s, std::string* out) {
  PutU32(static_cast<uint32_t>(s.size()), out);
  out->append(s);
}

// Bounds-checked reader over untrusted bytes: every Read* fails instead of
// reading past the end, and the reader stays failed afterwards.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool U8(uint8_t* v) {
    if (!Have(1)) return false;
    *v = data_[pos_++];
    return true;
  }
  bool U32(uint32_t* v) {
    if (!Have(4)) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r = (r << 8) | data_[pos_++];
    *v = r;
    return true;
  }
  bool U64(uint64_t* v) {
    if (!Have(8)) return false;
    uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r = (r << 8) | data_[pos_++];
    *v = r;
    return true;
  }
  bool Bytes(size_t max, std::string* out) {
    uint32_t len = 0;
    if (!U32(&len) || len > max || !Have(len)) return Fail();
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return true;
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  bool Have(size_t n) {
    if (failed_ || n > size_ - pos_) return Fail();
    return true;
  }
  bool Fail() {
    failed_ = true;
    return false;
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// Every message type and its name, for decoding and for error messages.
struct TypeName {
  MsgType type;
  const char* name;
};
constexpr TypeName kTypeNames[] = {
    {MsgType::kAuth, "auth"},       {MsgType::kAuthOk, "auth-ok"}, {MsgType::kSet, "set"},
    {MsgType::kGet, "get"},         {MsgType::kAdd, "add"},        {MsgType::kWait, "wait"},
    {MsgType::kOk, "ok"},           {MsgType::kValue, "value"},    {MsgType::kInt, "int"},
    {MsgType::kTimeout, "timeout"}, {MsgType::kError, "error"}};

const TypeName* FindType(uint8_t t) {
  for (const auto& e : kTypeNames) {
    if (static_cast<uint8_t>(e.type) == t) return &e;
  }
  return nullptr;
}

bool KnownType(uint8_t t) {
  return FindType(t) != nullptr;
}

// Per-type shape: how many keys a message must carry.
Status CheckShape(const Message& m) {
  size_t n = m.keys.size();
  switch (m.type) {
    case MsgType::kSet:
    case MsgType::kGet:
    case MsgType::kAdd:
      if (n != 1)
        return Status::Invalid(std::string(MsgTypeName(m.type)) + " needs exactly one key");
      break;
    case MsgType::kWait:
      if (n == 0) return Status::Invalid("wait needs at least one key");
      break;
    case MsgType::kAuth:
      if (n != 0 || m.value.size() != kNonceBytes) return Status::Invalid("malformed auth");
      break;
    default:
      break;
  }
  for (const auto& k : m.keys) {
    if (k.empty()) return Status::Invalid("empty key");
  }
  return Status::OK();
}

std::string Mac(const std::string& secret, const std::string& session, Direction dir,
                const char* payload, size_t size) {
  std::string data;
  data.reserve(session.size() + 1 + size);
  data.append(session);
  data.push_back(static_cast<char>(dir));
  data.append(payload, size);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  // An empty key is legal for HMAC; the server never has one (it refuses to
  // start without a secret), so an empty client secret simply fails to verify.
  static const unsigned char kNoKey = 0;
  const void* key = secret.empty() ? static_cast<const void*>(&kNoKey) : secret.data();
  HMAC(EVP_sha256(), key, static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &mac_len);
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

}  // namespace

const char* MsgTypeName(MsgType type) {
  const TypeName* e = FindType(static_cast<uint8_t>(type));
  return e ? e->name : "unknown";
}

std::string EncodeMessage(const Message& msg) {
  std::string out;
  out.push_back(static_cast<char>(msg.type));
  PutU32(static_cast<uint32_t>(msg.keys.size()), &out);
  for (const auto& k : msg.keys) PutBytes(k, &out);
  PutBytes(msg.value, &out);
  PutU64(static_cast<uint64_t>(msg.integer), &out);
  return out;
}

Status DecodeMessage(const uint8_t* data, size_t size, Message* out) {
  Reader r(data, size);
  uint8_t type = 0;
  uint32_t nkeys = 0;
  if (!r.U8(&type) || !r.U32(&nkeys)) return Status::Invalid("truncated message header");
  if (!KnownType(type)) return Status::Invalid("unknown message type " + std::to_string(type));
  // Each key needs at least its 4-byte length, so a count larger than that
  // cannot be honest; checking first avoids a huge reserve().
  if (nkeys > kMaxKeysPerMessage || nkeys > r.remaining() / 4) {
    return Status::Invalid("key count " + std::to_string(nkeys) + " is not plausible");
  }
  Message m;
  m.type = static_cast<MsgType>(type);
  for (uint32_t i = 0; i < nkeys; ++i) {
    std::string k;
    if (!r.Bytes(kMaxKeyBytes, &k)) return Status::Invalid("truncated or oversized key");
    m.keys.push_back(std::move(k));
  }
  uint64_t integer = 0;
  if (!r.Bytes(kMaxFrameBytes, &m.value) || !r.U64(&integer)) {
    return Status::Invalid("truncated message body");
  }
  if (r.remaining() != 0) return Status::Invalid("trailing bytes after message");
  m.integer = static_cast<int64_t>(integer);
  HVD_RETURN_IF_ERROR(CheckShape(m));
  *out = std::move(m);
  return Status::OK();
}

void AppendFrame(const std::string& body, std::string* out) {
  PutU32(static_cast<uint32_t>(body.size()), out);
  out->append(body);
}

FrameStatus ExtractFrame(const std::string& buffer, size_t* offset, std::string* body,
                         uint32_t max_bytes) {
  if (*offset > buffer.size() || buffer.size() - *offset < 4) return FrameStatus::kNeedMore;
  const auto* p = reinterpret_cast<const uint8_t*>(buffer.data() + *offset);
  uint32_t len = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  if (len == 0) return FrameStatus::kEmpty;
  if (len > max_bytes) return FrameStatus::kTooLarge;
  if (buffer.size() - *offset - 4 < len) return FrameStatus::kNeedMore;
  body->assign(buffer, *offset + 4, len);
  *offset += 4 + len;
  return FrameStatus::kFrame;
}

std::string EncodeHello(const std::string& server_nonce) {
  std::string out = "H";
  PutU32(kProtocolVersion, &out);
  out.append(server_nonce);
  return out;
}

Status DecodeHello(const std::string& body, std::string* server_nonce) {
  if (body.size() != 1 + 4 + kNonceBytes || body[0] != 'H') {
    return Status::Backend("not an hvd rendezvous server (bad hello)");
  }
  Reader r(reinterpret_cast<const uint8_t*>(body.data()) + 1, 4);
  uint32_t version = 0;
  r.U32(&version);
  if (version != kProtocolVersion) {
    return Status::Backend("rendezvous protocol version " + std::to_string(version) +
                           " is not supported (expected " + std::to_string(kProtocolVersion) + ")");
  }
  *server_nonce = body.substr(5);
  return Status::OK();
}

std::string SealBody(const std::string& secret, const std::string& session, Direction dir,
                     uint64_t counter, const Message& msg) {
  std::string body;
  PutU64(counter, &body);
  body.append(EncodeMessage(msg));
  body.append(Mac(secret, session, dir, body.data(), body.size()));
  return body;
}

Status OpenBody(const std::string& secret, const std::string& session, Direction dir,
                uint64_t expected_counter, const std::string& body, Message* out) {
  if (body.size() < 8 + kMacBytes) return Status::Invalid("frame too short to be authenticated");
  size_t payload = body.size() - kMacBytes;
  std::string mac = Mac(secret, session, dir, body.data(), payload);
  if (mac.size() != kMacBytes || CRYPTO_memcmp(mac.data(), body.data() + payload, kMacBytes) != 0) {
    return Status::Invalid("authentication failed (wrong or missing secret)");
  }
  Reader r(reinterpret_cast<const uint8_t*>(body.data()), 8);
  uint64_t counter = 0;
  r.U64(&counter);
  if (counter != expected_counter) {
    return Status::Invalid("replayed or reordered frame (counter " + std::to_string(counter) +
                           ", expected " + std::to_string(expected_counter) + ")");
  }
  return DecodeMessage(reinterpret_cast<const uint8_t*>(body.data()) + 8, payload - 8, out);
}

Status RandomBytes(size_t n, std::string* out) {
  std::string buf(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(&buf[0]), static_cast<int>(n)) != 1) {
    return Status::Internal("RAND_bytes failed: no entropy available");
  }
  *out = std::move(buf);
  return Status::OK();
}

std::string HexEncode(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

Status HexDecode(const std::string& hex, std::string* bytes) {
  if (hex.size() % 2 != 0) return Status::Invalid("hex string has an odd length");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]);
    int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return Status::Invalid("not a hex string");
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  *bytes = std::move(out);
  return Status::OK();
}

}  // namespace rendezvous
}  // namespace hvd
