// PlanDataPlane: which transport runs which step of a set's collectives,
// for each backend, host layout and setting (core/dataplane/plan.h).
#include <gtest/gtest.h>

#include "core/dataplane/plan.h"

namespace hvd {
namespace {

PlanInputs Inputs(Transport backend, std::vector<std::string> hosts, int rank = 0,
                  bool threads = true) {
  PlanInputs in;
  in.name = "process set 0";
  in.backend = backend;
  in.threads = threads;
  in.hosts = std::move(hosts);
  in.rank = rank;
  return in;
}

TEST(DataPlan, OneRankIsAlone) {
  const DataPlan p = PlanDataPlane(Config(), Inputs(Transport::kGloo, {"a"}));
  EXPECT_EQ(p.route, Route::kAlone);
  EXPECT_EQ(p.Describe(),
            "process set 0 (gloo, 1 rank): nothing crosses a wire (each output is its input, "
            "scaled)");
}

TEST(DataPlan, OneHostGoesThroughSharedMemory) {
  for (Transport t : {Transport::kGloo, Transport::kMpi}) {
    const DataPlan p = PlanDataPlane(Config(), Inputs(t, {"a", "a", "a"}));
    EXPECT_EQ(p.route, Route::kSharedMemory) << TransportName(t);
    EXPECT_NE(p.Describe().find("3 ranks on 1 host): allreduce (gathered"), std::string::npos)
        << p.Describe();
  }
  Config off;
  off.shared_memory = false;
  const DataPlan p = PlanDataPlane(off, Inputs(Transport::kGloo, {"a", "a"}));
  EXPECT_EQ(p.route, Route::kBackend);
  EXPECT_EQ(p.Describe(),
            "process set 0 (gloo, 2 ranks on 1 host): every collective on gloo "
            "(HVD_SHARED_MEMORY=0)");
  // Only host backends have a shared-memory path.
  EXPECT_EQ(PlanDataPlane(Config(), Inputs(Transport::kOther, {"a", "a"})).route, Route::kBackend);
}

TEST(DataPlan, GlooAcrossHostsIsHierarchicalAboveBcube) {
  const DataPlan p = PlanDataPlane(Config(), Inputs(Transport::kGloo, {"a", "a", "b", "b"}, 1));
  ASSERT_EQ(p.route, Route::kHierarchical);
  EXPECT_EQ(p.min_bytes, 64 * 1024 + 1);
  EXPECT_TRUE(p.local_shm);
  EXPECT_TRUE(p.pipelined);
  EXPECT_EQ(p.cross, CrossStep::kTcpRing);
  EXPECT_TRUE(p.cross_may_fall_back);
  EXPECT_EQ(p.Describe(),
            "process set 0 (gloo, 4 ranks on 2 hosts): allreduce <= 64 KiB: gloo; allreduce > 64 "
            "KiB: shm reduce-scatter -> tcp ring (gloo where a peer is unreachable) across hosts "
            "(2 streams per host) -> shm allgather, pipelined in 4 MiB chunks; every other "
            "collective: gloo");
}

TEST(DataPlan, NonCarrierHasNoCrossStep) {
  // 3 + 2 ranks: two shares per host; local rank 2 of host a carries none.
  const std::vector<std::string> hosts = {"a", "a", "a", "b", "b"};
  EXPECT_EQ(PlanDataPlane(Config(), Inputs(Transport::kGloo, hosts, 2)).cross, CrossStep::kNone);
  EXPECT_EQ(PlanDataPlane(Config(), Inputs(Transport::kGloo, hosts, 4)).cross, CrossStep::kTcpRing);
}

TEST(DataPlan, MpiNeedsThreadsUnlessAskedFor) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  DataPlan p = PlanDataPlane(Config(), Inputs(Transport::kMpi, hosts, 0, /*threads=*/false));
  EXPECT_EQ(p.route, Route::kBackend);
  EXPECT_NE(p.why.find("MPI_THREAD_MULTIPLE"), std::string::npos);
  Config on;
  on.hierarchical_allreduce = on.hierarchical_allreduce_fixed = true;
  p = PlanDataPlane(on, Inputs(Transport::kMpi, hosts, 0, /*threads=*/false));
  EXPECT_EQ(p.route, Route::kHierarchical);
  EXPECT_FALSE(p.pipelined);
  EXPECT_EQ(p.min_bytes, int64_t{2} << 20);
  Config backend = on;
  backend.hierarchical_cross = CrossTransport::kBackend;
  EXPECT_EQ(PlanDataPlane(backend, Inputs(Transport::kMpi, hosts)).cross, CrossStep::kQuietBackend);
  EXPECT_EQ(PlanDataPlane(backend, Inputs(Transport::kGloo, hosts)).cross, CrossStep::kBackend);
  Config off;
  off.hierarchical_allreduce_fixed = true;
  EXPECT_EQ(PlanDataPlane(off, Inputs(Transport::kGloo, hosts)).why,
            "HVD_HIERARCHICAL_ALLREDUCE=0");
}

TEST(DataPlan, OneRankPerHostRingsOnMpiNotOnGloo) {
  const std::vector<std::string> hosts = {"a", "b", "c"};
  const DataPlan mpi = PlanDataPlane(Config(), Inputs(Transport::kMpi, hosts));
  EXPECT_EQ(mpi.route, Route::kRingAcrossHosts);
  EXPECT_EQ(mpi.Describe(),
            "process set 0 (mpi, 3 ranks on 3 hosts): allreduce < 2 MiB: mpi; allreduce >= 2 MiB: "
            "tcp ring (mpi where a host has an RDMA NIC or a peer is unreachable); every other "
            "collective: mpi");
  EXPECT_EQ(PlanDataPlane(Config(), Inputs(Transport::kGloo, hosts)).route, Route::kBackend);
  Config tcp;
  tcp.hierarchical_cross = CrossTransport::kTcp;
  tcp.hierarchical_allreduce_min_bytes = 1000;
  const DataPlan gloo = PlanDataPlane(tcp, Inputs(Transport::kGloo, hosts));
  EXPECT_EQ(gloo.route, Route::kRingAcrossHosts);
  EXPECT_FALSE(gloo.cross_may_fall_back);
  EXPECT_NE(gloo.Describe().find("allreduce < 1000 B: gloo; allreduce >= 1000 B: tcp ring;"),
            std::string::npos)
      << gloo.Describe();
}

TEST(DataPlan, ByteSizes) {
  EXPECT_EQ(ByteSize(64 * 1024), "64 KiB");
  EXPECT_EQ(ByteSize(int64_t{2} << 20), "2 MiB");
  EXPECT_EQ(ByteSize(1536), "1536 B");
}

}  // namespace
}  // namespace hvd
