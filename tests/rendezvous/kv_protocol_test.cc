// Encoder/decoder of the rendezvous wire format: round trips, and that every
// malformed input is an error rather than a crash or an over-read.
#include "core/rendezvous/kv_protocol.h"

#include <gtest/gtest.h>

#include <random>

namespace hvd {
namespace rendezvous {
namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef";
const std::string kSession(32, 's');

Status Decode(const std::string& bytes, Message* out) {
  return DecodeMessage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), out);
}

TEST(KvProtocol, MessageRoundTrip) {
  Message m;
  m.type = MsgType::kWait;
  m.keys = {"a", std::string("b\0c", 3)};
  m.value = std::string(1000, 'x');
  m.integer = -42;
  Message back;
  ASSERT_TRUE(Decode(EncodeMessage(m), &back).ok());
  EXPECT_EQ(back.type, MsgType::kWait);
  EXPECT_EQ(back.keys, m.keys);
  EXPECT_EQ(back.value, m.value);
  EXPECT_EQ(back.integer, -42);
}

TEST(KvProtocol, EveryTruncationIsRejected) {
  Message m;
  m.type = MsgType::kSet;
  m.keys = {"key"};
  m.value = "value";
  std::string bytes = EncodeMessage(m);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Message out;
    EXPECT_FALSE(Decode(bytes.substr(0, n), &out).ok()) << "prefix of " << n << " bytes";
  }
  Message out;
  EXPECT_FALSE(Decode(bytes + "x", &out).ok()) << "trailing byte accepted";
}

TEST(KvProtocol, ShapeAndTypeChecks) {
  Message m;
  m.type = MsgType::kGet;  // needs exactly one key
  Message out;
  EXPECT_FALSE(Decode(EncodeMessage(m), &out).ok());
  m.keys = {""};
  EXPECT_FALSE(Decode(EncodeMessage(m), &out).ok()) << "empty key accepted";
  std::string bytes = EncodeMessage(Message{});
  bytes[0] = static_cast<char>(200);
  Status s = Decode(bytes, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown message type 200"), std::string::npos) << s.message();
  // A key count of 2^32-1 in a short message must fail fast, not allocate.
  std::string huge = {static_cast<char>(MsgType::kWait), '\xff', '\xff', '\xff', '\xff'};
  EXPECT_FALSE(Decode(huge + std::string(16, '\0'), &out).ok());
}

TEST(KvProtocol, RandomBytesNeverCrashTheDecoder) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    if (!bytes.empty()) bytes[0] = static_cast<char>(10 + rng() % 4);
    Message out;
    (void)Decode(bytes, &out);
    (void)OpenBody(kSecret, kSession, Direction::kToServer, 1, bytes, &out);
  }
}

TEST(KvProtocol, FrameExtraction) {
  std::string buf;
  AppendFrame("hello", &buf);
  AppendFrame("world!", &buf);
  size_t off = 0;
  std::string body;
  ASSERT_EQ(ExtractFrame(buf.substr(0, 7), &off, &body), FrameStatus::kNeedMore);
  ASSERT_EQ(ExtractFrame(buf, &off, &body), FrameStatus::kFrame);
  EXPECT_EQ(body, "hello");
  ASSERT_EQ(ExtractFrame(buf, &off, &body), FrameStatus::kFrame);
  EXPECT_EQ(body, "world!");
  EXPECT_EQ(off, buf.size());
  EXPECT_EQ(ExtractFrame(buf, &off, &body), FrameStatus::kNeedMore);

  std::string big("\x04\x00\x00\x01", 4);  // 64 MiB + 1
  off = 0;
  EXPECT_EQ(ExtractFrame(big, &off, &body), FrameStatus::kTooLarge);
  std::string empty(4, '\0');
  EXPECT_EQ(ExtractFrame(empty, &off, &body), FrameStatus::kEmpty);
}

TEST(KvProtocol, SealedBodiesAreAuthenticated) {
  Message m;
  m.type = MsgType::kSet;
  m.keys = {"k"};
  m.value = "v";
  std::string body = SealBody(kSecret, kSession, Direction::kToServer, 7, m);
  Message out;
  ASSERT_TRUE(OpenBody(kSecret, kSession, Direction::kToServer, 7, body, &out).ok());
  EXPECT_EQ(out.value, "v");

  Status s = OpenBody("wrong secret", kSession, Direction::kToServer, 7, body, &out);
  EXPECT_NE(s.message().find("authentication failed"), std::string::npos) << s.message();
  EXPECT_FALSE(OpenBody(kSecret, std::string(32, 't'), Direction::kToServer, 7, body, &out).ok())
      << "frame accepted on another session";
  EXPECT_FALSE(OpenBody(kSecret, kSession, Direction::kToClient, 7, body, &out).ok())
      << "request reflected as a reply";
  s = OpenBody(kSecret, kSession, Direction::kToServer, 8, body, &out);
  EXPECT_NE(s.message().find("replayed"), std::string::npos) << s.message();
  for (size_t i = 0; i < body.size(); ++i) {
    std::string flipped = body;
    flipped[i] ^= 1;
    EXPECT_FALSE(OpenBody(kSecret, kSession, Direction::kToServer, 7, flipped, &out).ok())
        << "bit flip at byte " << i << " accepted";
  }
}

TEST(KvProtocol, Hex) {
  std::string raw = std::string("\x00\x01\xab\xff", 4);
  EXPECT_EQ(HexEncode(raw), "0001abff");
  std::string back;
  ASSERT_TRUE(HexDecode("0001ABff", &back).ok());
  EXPECT_EQ(back, raw);
  EXPECT_FALSE(HexDecode("abc", &back).ok());
  EXPECT_FALSE(HexDecode("zz", &back).ok());
}

}  // namespace
}  // namespace rendezvous
}  // namespace hvd
