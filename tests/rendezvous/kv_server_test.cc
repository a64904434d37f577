// KVServer + KVClient end to end over loopback: the operations, timeouts,
// authentication, and hostile input (garbage, truncation, oversized frames,
// replay) that must be refused without disturbing the server.
#include "core/rendezvous/kv_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace rendezvous {
namespace {

const std::string kSecret = "this-is-the-job-secret-32-bytes!";

class KvServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start("127.0.0.1", 0, kSecret).ok()); }

  std::unique_ptr<KVClient> Client(const std::string& secret = kSecret) {
    std::unique_ptr<KVClient> c;
    Status s = KVClient::Connect("127.0.0.1", server_.port(), secret, 5.0, &c);
    EXPECT_TRUE(s.ok()) << s.message();
    return c;
  }

  // A raw TCP connection that has read the server's hello.
  UniqueFd Raw(std::string* server_nonce = nullptr) {
    UniqueFd fd;
    EXPECT_TRUE(ConnectTcp("127.0.0.1", server_.port(), Deadline::After(5), &fd).ok());
    std::string body = ReadBody(fd.get());
    std::string nonce;
    EXPECT_TRUE(DecodeHello(body, &nonce).ok());
    if (server_nonce) *server_nonce = nonce;
    return fd;
  }

  static std::string ReadBody(int fd) {
    unsigned char len[4];
    if (!RecvAll(fd, len, 4, Deadline::After(5)).ok()) return "";
    uint32_t n =
        (uint32_t{len[0]} << 24) | (uint32_t{len[1]} << 16) | (uint32_t{len[2]} << 8) | len[3];
    std::string body(n, '\0');
    if (!RecvAll(fd, &body[0], n, Deadline::After(5)).ok()) return "";
    return body;
  }

  static void Send(int fd, const std::string& bytes) {
    ASSERT_TRUE(SendAll(fd, bytes.data(), bytes.size(), Deadline::After(5)).ok());
  }

  // True when the server closed the connection (EOF or reset) within 5 s,
  // having sent nothing more.
  static bool ClosedByServer(int fd) {
    char c;
    Status s = RecvAll(fd, &c, 1, Deadline::After(5));
    return s.code() == Code::kPeerLost;
  }

  void ExpectServerStillWorks() {
    auto c = Client();
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Set("health", "ok").ok());
    std::string v;
    ASSERT_TRUE(c->Get("health", 1.0, &v).ok());
    EXPECT_EQ(v, "ok");
  }

  KVServer server_;
};

TEST_F(KvServerTest, SetGetAddWaitRoundTrip) {
  auto c = Client();
  ASSERT_TRUE(c);
  std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(c->Set("k1", binary).ok());
  std::string v;
  Status s = c->Get("k1", 1.0, &v);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(v, binary);
  ASSERT_TRUE(c->Set("k1", "overwritten").ok());
  ASSERT_TRUE(c->Get("k1", 0, &v).ok());
  EXPECT_EQ(v, "overwritten");

  int64_t r = 0;
  ASSERT_TRUE(c->Add("n", 5, &r).ok());
  EXPECT_EQ(r, 5);
  ASSERT_TRUE(c->Add("n", -7, &r).ok());
  EXPECT_EQ(r, -2);
  ASSERT_TRUE(c->Get("n", 0, &v).ok());
  EXPECT_EQ(v, "-2");
  s = c->Add("k1", 1, &r);
  EXPECT_EQ(s.code(), Code::kBackend);
  EXPECT_NE(s.message().find("does not hold an integer"), std::string::npos) << s.message();

  ASSERT_TRUE(c->Wait({"k1", "n"}, 1.0).ok());
  std::string big(8 << 20, 'z');
  ASSERT_TRUE(c->Set("big", big).ok());
  ASSERT_TRUE(c->Get("big", 1.0, &v).ok());
  EXPECT_EQ(v, big);
}

TEST_F(KvServerTest, GetTimesOutNamingTheKey) {
  auto c = Client();
  ASSERT_TRUE(c);
  auto t0 = std::chrono::steady_clock::now();
  std::string v;
  Status s = c->Get("never-set", 0.3, &v);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Code::kTimeout);
  EXPECT_NE(s.message().find("'never-set'"), std::string::npos) << s.message();
  EXPECT_GE(elapsed, 0.25);
  EXPECT_LT(elapsed, 3.0);
  // The connection stays usable after a timeout.
  ASSERT_TRUE(c->Set("x", "1").ok());

  s = c->Wait({"x", "missing-a", "missing-b"}, 0.1);
  EXPECT_EQ(s.code(), Code::kTimeout);
  EXPECT_NE(s.message().find("'missing-a', 'missing-b'"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("'x'"), std::string::npos) << s.message();
}

TEST_F(KvServerTest, GetBlocksUntilAnotherClientSets) {
  auto waiter = Client();
  auto setter = Client();
  ASSERT_TRUE(waiter && setter);
  std::string v;
  Status s;
  std::thread t([&] { s = waiter->Get("late", 10.0, &v); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(setter->Set("late", "arrived").ok());
  t.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(v, "arrived");
}

TEST_F(KvServerTest, WrongSecretIsRefusedAndLogged) {
  auto writer = Client();
  ASSERT_TRUE(writer->Set("secret-key", "v").ok());
  testing::internal::CaptureStderr();
  std::unique_ptr<KVClient> bad;
  Status s = KVClient::Connect("127.0.0.1", server_.port(), "not the secret", 5.0, &bad);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(bad);
  EXPECT_NE(s.message().find("refused authentication"), std::string::npos) << s.message();
  EXPECT_NE(log.find("refused connection from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_EQ(server_.stats().refused, 1u);
}

TEST_F(KvServerTest, MissingSecretIsRefused) {
  std::unique_ptr<KVClient> bad;
  testing::internal::CaptureStderr();
  Status s = KVClient::Connect("127.0.0.1", server_.port(), "", 5.0, &bad);
  testing::internal::GetCapturedStderr();
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(bad);
  ExpectServerStillWorks();
}

TEST_F(KvServerTest, ForgedRequestWithoutHandshakeCannotWrite) {
  UniqueFd fd = Raw();
  Message set;
  set.type = MsgType::kSet;
  set.keys = {"forged"};
  set.value = "evil";
  std::string frame;
  // Sealed with a guessed secret and no session: must be refused.
  AppendFrame(SealBody("guess", "", Direction::kToServer, 1, set), &frame);
  testing::internal::CaptureStderr();
  Send(fd.get(), frame);
  EXPECT_TRUE(ClosedByServer(fd.get()));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused connection from"), std::string::npos) << log;
  auto c = Client();
  std::string v;
  EXPECT_EQ(c->Get("forged", 0, &v).code(), Code::kTimeout) << "unauthenticated write landed";
}

TEST_F(KvServerTest, GarbageTruncatedAndOversizedFramesAreDropped) {
  testing::internal::CaptureStderr();
  {
    UniqueFd fd = Raw();
    Send(fd.get(), std::string("\x00\x00\x00\x10garbage-garbage!", 20));
    EXPECT_TRUE(ClosedByServer(fd.get()));
  }
  {
    UniqueFd fd = Raw();
    Send(fd.get(), std::string("\xff\xff\xff\xff", 4));  // 4 GiB length prefix
    EXPECT_TRUE(ClosedByServer(fd.get()));
  }
  {
    UniqueFd fd = Raw();
    Send(fd.get(), std::string("\x00\x00\x00\x00", 4));  // empty frame
    EXPECT_TRUE(ClosedByServer(fd.get()));
  }
  {
    // Truncated: half a frame, then the client hangs up.
    UniqueFd fd = Raw();
    Send(fd.get(), std::string("\x00\x00\x01\x00half", 8));
  }
  testing::internal::GetCapturedStderr();
  ExpectServerStillWorks();
}

TEST_F(KvServerTest, ReplayedFrameIsRejected) {
  std::string server_nonce;
  UniqueFd fd = Raw(&server_nonce);
  Message auth;
  auth.type = MsgType::kAuth;
  auth.value = std::string(kNonceBytes, 'c');
  std::string session = server_nonce + auth.value;
  std::string frame;
  AppendFrame(SealBody(kSecret, session, Direction::kToServer, 0, auth), &frame);
  Send(fd.get(), frame);
  Message reply;
  ASSERT_TRUE(OpenBody(kSecret, session, Direction::kToClient, 0, ReadBody(fd.get()), &reply).ok());
  ASSERT_EQ(reply.type, MsgType::kAuthOk);

  Message set;
  set.type = MsgType::kSet;
  set.keys = {"replayed"};
  set.value = "first";
  std::string set_frame;
  AppendFrame(SealBody(kSecret, session, Direction::kToServer, 1, set), &set_frame);
  Send(fd.get(), set_frame);
  ASSERT_TRUE(OpenBody(kSecret, session, Direction::kToClient, 1, ReadBody(fd.get()), &reply).ok());
  ASSERT_EQ(reply.type, MsgType::kOk);

  auto c = Client();
  ASSERT_TRUE(c->Set("replayed", "second").ok());
  testing::internal::CaptureStderr();
  Send(fd.get(), set_frame);  // the same bytes again
  EXPECT_TRUE(ClosedByServer(fd.get()));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("replayed or reordered frame"), std::string::npos) << log;
  std::string v;
  ASSERT_TRUE(c->Get("replayed", 1.0, &v).ok());
  EXPECT_EQ(v, "second");

  // Replaying the recorded auth on a fresh connection fails too: new nonce.
  // This peer was logged above already, so the refusal is only counted.
  const uint64_t refused = server_.stats().refused;
  UniqueFd fd2 = Raw();
  testing::internal::CaptureStderr();
  Send(fd2.get(), frame);
  EXPECT_TRUE(ClosedByServer(fd2.get()));
  log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log, "");
  EXPECT_EQ(server_.stats().refused, refused + 1);
  ExpectServerStillWorks();
}

TEST_F(KvServerTest, OversizedFrameBeforeAuthenticationIsRefusedAtItsPrefix) {
  UniqueFd fd = Raw();
  testing::internal::CaptureStderr();
  // 257 bytes announced, none sent: refused without waiting for the body.
  Send(fd.get(), std::string("\x00\x00\x01\x01", 4));
  EXPECT_TRUE(ClosedByServer(fd.get()));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("frame larger than 256 bytes before authentication"), std::string::npos)
      << log;
  ExpectServerStillWorks();
}

TEST_F(KvServerTest, RefusalsAreLoggedOncePerPeerAndSummarisedAtStop) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) {
    std::unique_ptr<KVClient> bad;
    EXPECT_FALSE(KVClient::Connect("127.0.0.1", server_.port(), "wrong", 5.0, &bad).ok());
  }
  UniqueFd fd = Raw();
  Send(fd.get(), std::string("\xff\xff\xff\xff", 4));
  EXPECT_TRUE(ClosedByServer(fd.get()));
  server_.Stop();
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
  EXPECT_NE(log.find("hvd rendezvous: refused connection from 127.0.0.1:"), std::string::npos)
      << log;
  EXPECT_NE(log.find("further refusals from 127.0.0.1 are counted"), std::string::npos) << log;
  EXPECT_NE(log.find("hvd rendezvous: 127.0.0.1: 6 connections refused or closed in all (5 "
                     "authentication failed, 1 malformed frame)"),
            std::string::npos)
      << log;
  EXPECT_EQ(server_.stats().refused, 6u);
}

TEST_F(KvServerTest, ManyConcurrentClients) {
  constexpr int kClients = 32;
  constexpr int kAdds = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<KVClient> c;
      if (!KVClient::Connect("127.0.0.1", server_.port(), kSecret, 10.0, &c).ok()) {
        ++failures;
        return;
      }
      for (int j = 0; j < kAdds; ++j) {
        if (!c->Add("counter", 1, nullptr).ok()) ++failures;
      }
      if (!c->Set("rank" + std::to_string(i), std::to_string(i)).ok()) ++failures;
      std::vector<std::string> all;
      for (int k = 0; k < kClients; ++k) all.push_back("rank" + std::to_string(k));
      if (!c->Wait(all, 20.0).ok()) ++failures;
      std::string v;
      int peer = (i + 1) % kClients;
      if (!c->Get("rank" + std::to_string(peer), 1.0, &v).ok() || v != std::to_string(peer)) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto c = Client();
  int64_t total = 0;
  ASSERT_TRUE(c->Add("counter", 0, &total).ok());
  EXPECT_EQ(total, kClients * kAdds);
}

TEST_F(KvServerTest, ConnectFromEnvironment) {
  setenv("HVD_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("HVD_RENDEZVOUS_PORT", std::to_string(server_.port()).c_str(), 1);
  setenv("HVD_RENDEZVOUS_SECRET", HexEncode(kSecret).c_str(), 1);
  std::unique_ptr<KVClient> c;
  Status s = KVClient::ConnectFromEnvironment(5.0, &c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(c->Set("env", "yes").ok());

  unsetenv("HVD_RENDEZVOUS_SECRET");
  s = KVClient::ConnectFromEnvironment(5.0, &c);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("HVD_RENDEZVOUS_SECRET"), std::string::npos) << s.message();
  setenv("HVD_RENDEZVOUS_SECRET", "xyz", 1);
  EXPECT_EQ(KVClient::ConnectFromEnvironment(5.0, &c).code(), Code::kInvalidArgument);
  unsetenv("HVD_RENDEZVOUS_ADDR");
  unsetenv("HVD_RENDEZVOUS_PORT");
  unsetenv("HVD_RENDEZVOUS_SECRET");
}

TEST(KvServer, RefusesToStartWithoutSecret) {
  KVServer server;
  EXPECT_EQ(server.Start("127.0.0.1", 0, "").code(), Code::kInvalidArgument);
}

TEST(KvServer, ConnectToNothingTimesOut) {
  // Find a free port, then close it: nothing listens there.
  int port;
  {
    KVServer s;
    ASSERT_TRUE(s.Start("127.0.0.1", 0, kSecret).ok());
    port = s.port();
  }
  std::unique_ptr<KVClient> c;
  auto t0 = std::chrono::steady_clock::now();
  Status s = KVClient::Connect("127.0.0.1", port, kSecret, 0.5, &c);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
  EXPECT_LT(elapsed, 3.0);
}

}  // namespace
}  // namespace rendezvous
}  // namespace hvd
