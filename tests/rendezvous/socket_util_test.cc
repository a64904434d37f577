// socket_util's address helpers: an interface named or given as a subnet,
// and a connect that is told the server already listens.
#include "core/rendezvous/socket_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>

namespace hvd {
namespace rendezvous {
namespace {

TEST(InterfaceAddress, ByNameAndBySubnet) {
  std::string ip;
  ASSERT_TRUE(InterfaceAddress("lo", &ip).ok());
  EXPECT_EQ(ip, "127.0.0.1");
  ip.clear();
  ASSERT_TRUE(InterfaceAddress("127.0.0.0/8", &ip).ok());
  EXPECT_EQ(ip, "127.0.0.1");
}

TEST(InterfaceAddress, SaysWhatIsMissing) {
  std::string ip = "unchanged";
  Status s = InterfaceAddress("hvdnosuch0", &ip);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "network interface 'hvdnosuch0' does not exist");
  // TEST-NET-2: no host of this project's has an address there.
  s = InterfaceAddress("198.51.100.0/24", &ip);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "no network interface has an address in 198.51.100.0/24");
  EXPECT_EQ(ip, "unchanged");
}

// A refused connection fails at once when the caller knows the server is up,
// and is retried until the deadline otherwise.
TEST(ConnectTcp, RefusedFailsAtOnceUnlessRetried) {
  // A port bound but not listening: connections to it are refused.
  UniqueFd bound(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::bind(bound.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::getsockname(bound.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  UniqueFd fd;
  auto t0 = std::chrono::steady_clock::now();
  Status s = ConnectTcp("127.0.0.1", port, Deadline::After(5), &fd, /*retry_refused=*/false);
  const double once = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Code::kBackend) << s.message();
  EXPECT_LT(once, 1.0);
  t0 = std::chrono::steady_clock::now();
  s = ConnectTcp("127.0.0.1", port, Deadline::After(0.3), &fd);
  const double retried =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
  EXPECT_GE(retried, 0.25);
}

}  // namespace
}  // namespace rendezvous
}  // namespace hvd
