// Comm::Allreduce's one entry point (AllreduceOptions), over stand-in Comms
// with no peers: the stages run around the whole reduction unless the Comm
// runs them per piece itself; gather and scatter only where the Comm
// gathers; AllreduceInPieces cuts in ascending pieces, at least one;
// ForwardingComm forwards the fusion size and the tuning, nothing else;
// MPI's quiet ring is registered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/backends/forwarding_comm.h"
#ifdef HVD_HAVE_MPI
#include "core/backends/mpi/mpi_quiet_allreduce.h"
#endif

namespace hvd {
namespace {

// Rank 0 of 2: records what DoAllreduce receives.
class StubComm : public Comm {
 public:
  explicit StubComm(CommCaps caps = CommCaps()) : caps_(caps) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* backend_name() const override { return "TEST"; }
  CommCaps caps() const override { return caps_; }
  void Tune(const CommTuning& t) override { tunings.push_back(t); }
  Status DoAllreduce(const AllreduceOptions& a) override {
    calls.push_back(a.staged() ? "staged" : a.gathered() ? "gathered" : "plain");
    ins.push_back(a.in);
    if (a.staged()) return AllreduceInPieces(a, 4, [](int64_t, int64_t) { return Status::OK(); });
    return Status::OK();
  }
  Status Allgatherv(const void*, void*, const std::vector<int64_t>&) override {
    return Status::OK();
  }
  Status Broadcast(void*, int64_t, int) override { return Status::OK(); }
  Status Alltoallv(const void*, const std::vector<int64_t>&, void*,
                   const std::vector<int64_t>&) override {
    return Status::OK();
  }
  Status Reducescatter(const void*, void*, const std::vector<int64_t>&, DataType,
                       ReduceOp) override {
    return Status::OK();
  }
  Status Barrier() override { return Status::OK(); }
  Status Split(const std::vector<int>&, const std::string&, std::unique_ptr<Comm>*) override {
    return Status::Unsupported("not in this test");
  }

  std::vector<std::string> calls;
  std::vector<const void*> ins;
  std::vector<CommTuning> tunings;

 private:
  CommCaps caps_;
};

// Stages that log "fill off+n" and "drain off+n".
void AddStages(AllreduceOptions* a, std::vector<std::string>* log) {
  a->fill = [log](int64_t off, int64_t n) {
    log->push_back("fill " + std::to_string(off) + "+" + std::to_string(n));
    return Status::OK();
  };
  a->drain = [log](int64_t off, int64_t n) {
    log->push_back("drain " + std::to_string(off) + "+" + std::to_string(n));
    return Status::OK();
  };
}

TEST(CommAllreduce, PiecesAscendAndAtLeastOneRuns) {
  std::vector<std::string> log;
  AllreduceOptions a(nullptr, 10, DataType::kFloat32, ReduceOp::kSum);
  AddStages(&a, &log);
  auto reduce = [&](int64_t off, int64_t n) {
    log.push_back("reduce " + std::to_string(off) + "+" + std::to_string(n));
    return Status::OK();
  };
  ASSERT_TRUE(AllreduceInPieces(a, 4, reduce).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"fill 0+4", "reduce 0+4", "drain 0+4", "fill 4+4",
                                           "reduce 4+4", "drain 4+4", "fill 8+2", "reduce 8+2",
                                           "drain 8+2"}));
  log.clear();
  ASSERT_TRUE(AllreduceInPieces(a, 0, reduce).ok());  // <= 0: one piece
  EXPECT_EQ(log, (std::vector<std::string>{"fill 0+10", "reduce 0+10", "drain 0+10"}));
  log.clear();
  a.count = 0;  // an empty allreduce still reaches the transport (argument checks)
  ASSERT_TRUE(AllreduceInPieces(a, 4, reduce).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"fill 0+0", "reduce 0+0", "drain 0+0"}));
}

TEST(CommAllreduce, StagesRunAroundTheWholeReductionUnlessTheCommRunsThemPerPiece) {
  std::vector<float> in(10), out(10);
  std::vector<std::string> log;
  AllreduceOptions a(in.data(), out.data(), 10, DataType::kFloat32, ReduceOp::kSum);
  AddStages(&a, &log);

  StubComm plain;
  ASSERT_TRUE(plain.Allreduce(a).ok());
  EXPECT_EQ(plain.calls, (std::vector<std::string>{"plain"}));
  EXPECT_EQ(plain.ins, (std::vector<const void*>{in.data()}));
  EXPECT_EQ(log, (std::vector<std::string>{"fill 0+10", "drain 0+10"}));

  log.clear();
  CommCaps per_piece;
  per_piece.stages_per_piece = true;
  StubComm pieces(per_piece);
  ASSERT_TRUE(pieces.Allreduce(a).ok());
  EXPECT_EQ(pieces.calls, (std::vector<std::string>{"staged"}));
  EXPECT_EQ(log, (std::vector<std::string>{"fill 0+4", "drain 0+4", "fill 4+4", "drain 4+4",
                                           "fill 8+2", "drain 8+2"}));
}

TEST(CommAllreduce, GatherOnlyWhereTheCommGathers) {
  AllreduceOptions a;
  a.count = 3;
  a.gather = [](int64_t, int64_t, void*) { return Status::OK(); };
  a.scatter = [](int64_t, int64_t, const void*) { return Status::OK(); };
  StubComm plain;
  const Status s = plain.Allreduce(a);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("TEST has no gathered allreduce"), std::string::npos) << s.message();
  EXPECT_TRUE(plain.calls.empty());

  CommCaps gathers;
  gathers.gathers = true;
  StubComm shm(gathers);
  ASSERT_TRUE(shm.Allreduce(a).ok());
  EXPECT_EQ(shm.calls, (std::vector<std::string>{"gathered"}));
}

TEST(CommAllreduce, ForwardingCommForwardsTheFusionSizeAndTheTuningOnly) {
  CommCaps inner_caps;
  inner_caps.fusion_solo_bytes = 1 << 20;
  inner_caps.stages_per_piece = true;
  inner_caps.gathers = true;
  auto inner = std::make_shared<StubComm>(inner_caps);
  ForwardingComm fwd(inner);
  const CommCaps c = fwd.caps();
  EXPECT_EQ(c.fusion_solo_bytes, 1 << 20);
  EXPECT_FALSE(c.stages_per_piece);
  EXPECT_FALSE(c.overlaps_stages);
  EXPECT_FALSE(c.gathers);

  CommTuning t;
  t.allreduce_chunk_bytes = 4096;
  t.quiet_allreduce = true;
  fwd.Tune(t);
  ASSERT_EQ(inner->tunings.size(), 1u);
  EXPECT_EQ(inner->tunings[0].allreduce_chunk_bytes.value_or(0), 4096);
  EXPECT_TRUE(inner->tunings[0].quiet_allreduce);

  int32_t v = 1;
  ASSERT_TRUE(fwd.Allreduce({&v, 1, DataType::kInt32, ReduceOp::kSum}).ok());
  EXPECT_EQ(inner->calls, (std::vector<std::string>{"plain"}));
}

#ifdef HVD_HAVE_MPI
// MpiComm's quiet mode runs the ring of core/algorithms/mpi/, which
// registers itself at start-up (the transport cannot include it).
TEST(CommAllreduce, MpiQuietRingIsRegistered) {
  EXPECT_NE(MpiQuietAllreduce(), nullptr);
}
#endif

}  // namespace
}  // namespace hvd
