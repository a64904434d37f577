// Unit test of the mapping from a Gloo error's peer address to a rank
// (core/backends/gloo/gloo_error.h): the part of the fail-fast message that
// cannot be provoked deterministically by killing processes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/backends/gloo/gloo_error.h"

namespace hvd {
namespace gloo_backend {
namespace {

std::vector<PeerAddress> Peers() {
  return {{0, "nodeA", "[10.0.0.1]:4711"}, {1, "nodeB", "[10.0.0.1]:47"}, {2, "nodeC", ""}};
}

TEST(PeerName, FindsThePeerByExactAddress) {
  const auto peers = Peers();
  const PeerAddress* p = FindPeer("Connection closed by peer [10.0.0.1]:47", peers);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->rank, 1);  // not rank 0, whose port only starts with 47
  p = FindPeer("Read error [10.0.0.1]:4711: Connection reset by peer", peers);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->rank, 0);
  EXPECT_EQ(FindPeer("Timed out waiting 30000ms for recv operation to complete", peers), nullptr);
  EXPECT_EQ(FindPeer("Connection closed by peer [10.0.0.1]:471", peers), nullptr);
}

TEST(PeerName, RewritesPeerLostAndTimeoutMessages) {
  const auto peers = Peers();
  Status s(Code::kPeerLost,
           "Gloo allreduce (rank 2 of 3): connection to a peer lost: [x] Connection closed by "
           "peer [10.0.0.1]:47");
  Status named = NamePeer(s, peers);
  EXPECT_EQ(named.code(), Code::kPeerLost);
  EXPECT_EQ(named.message(),
            "Gloo allreduce (rank 2 of 3): connection to rank 1 (host nodeB, [10.0.0.1]:47) lost: "
            "[x] Connection closed by peer [10.0.0.1]:47");
  Status t(Code::kTimeout,
           "Gloo connect: timed out waiting for a peer: Connect timeout [10.0.0.1]:4711");
  EXPECT_EQ(NamePeer(t, peers).message(),
            "Gloo connect: timed out waiting for rank 0 (host nodeA, [10.0.0.1]:4711): Connect "
            "timeout [10.0.0.1]:4711");
  // Nothing to name, or not a peer error: unchanged.
  EXPECT_EQ(NamePeer(s, {}).message(), s.message());
  Status b(Code::kBackend, "Gloo allreduce: internal error: [10.0.0.1]:47");
  EXPECT_EQ(NamePeer(b, peers).message(), b.message());
}

TEST(PeerName, NamesRanksThatNeverPublishedTheirAddress) {
  const std::string prefix = "hvd/gloo/gen0";
  Status t(Code::kTimeout,
           "Gloo connect: rendezvous: timed out after 2 s waiting for key(s) 'hvd/gloo/gen0/1' at "
           "127.0.0.1:4711");
  EXPECT_EQ(NameMissingRanks(t, prefix, 2).message(),
            t.message() + ": rank 1 of 2 has not joined: not started, or not yet in hvd_init");
  Status two(Code::kTimeout, "waiting for key(s) 'hvd/gloo/gen0/2', 'hvd/gloo/gen0/13'");
  EXPECT_EQ(NameMissingRanks(two, prefix, 14).message(),
            two.message() +
                ": ranks 2, 13 of 14 have not joined: not started, or not yet in "
                "hvd_init");
  // Other keys, another prefix, or not a timeout: unchanged.
  for (const Status& same : {Status(Code::kTimeout, "waiting for key(s) 'hvd/gloo/gen0/peer/1'"),
                             Status(Code::kTimeout, "waiting for key(s) 'hvd/gloo/gen1/1'"),
                             Status(Code::kTimeout, "waiting for key(s) 'hvd/gloo/gen0/'"),
                             Status(Code::kPeerLost, "waiting for key(s) 'hvd/gloo/gen0/1'")}) {
    EXPECT_EQ(NameMissingRanks(same, prefix, 2).message(), same.message());
  }
}

TEST(PeerName, GlooGuardClassifiesClosedConnections) {
  Status s = GlooGuard("allreduce", "rank 0 of 2",
                       [] { throw std::runtime_error("Connection closed by peer [10.0.0.1]:47"); });
  EXPECT_EQ(s.code(), Code::kPeerLost);
  EXPECT_NE(s.message().find("connection to a peer lost"), std::string::npos);
}

}  // namespace
}  // namespace gloo_backend
}  // namespace hvd
