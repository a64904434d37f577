// HierarchicalCpuComm's routing and stages, over recording stand-in Comms
// (no peers): allreduces below the minimum size go to the flat Comm whole;
// larger ones run chunk by chunk, each chunk filled before its host-local
// reduce-scatter and drained after its allgather, every element once, and
// the next chunk filled before the previous one is drained (the overlap
// with the cross-host step). Exact results across hosts are checked by
// launcher.hierarchical.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/dataplane/decorators/hierarchical_cpu_comm.h"

namespace hvd {
namespace {

// One recorded call: what ("fill", "drain", "<comm> <call>") and where
// (the element offset, or the input's address).
struct Event {
  std::string what;
  int64_t at;
};

struct Log {
  std::mutex mu;
  std::vector<Event> events;
  void Add(std::string what, int64_t at) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back({std::move(what), at});
  }
};

// Rank 0 of `size`: records every data call. Reduce-scatter and allgather
// copy rank 0's block (the values do not matter here, only the calls).
class RecordingComm : public Comm {
 public:
  RecordingComm(std::string name, int size, Log* log)
      : name_(std::move(name)), size_(size), log_(log) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "TEST"; }
  Status DoAllreduce(const AllreduceOptions& a) override { return Record("allreduce", a.out); }
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes) override {
    std::memmove(out, in, static_cast<size_t>(bytes[0]));
    return Record("allgather", out);
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp) override {
    std::memmove(out, in, static_cast<size_t>(counts[0]) * DataTypeSize(dt));
    return Record("reducescatter", in);
  }
  Status Broadcast(void*, int64_t, int) override { return Status::OK(); }
  Status Alltoallv(const void*, const std::vector<int64_t>&, void*,
                   const std::vector<int64_t>&) override {
    return Status::OK();
  }
  Status Barrier() override { return Status::OK(); }
  Status Split(const std::vector<int>&, const std::string&, std::unique_ptr<Comm>*) override {
    return Status::Unsupported("not in this test");
  }

 private:
  Status Record(const char* call, const void* p) {
    log_->Add(name_ + " " + call, reinterpret_cast<intptr_t>(p));
    return Status::OK();
  }
  std::string name_;
  int size_;
  Log* log_;
};

constexpr int64_t kChunkBytes = 1024;  // 256 floats
constexpr int64_t kMinBytes = 2048;

// Rank 0 of 4, two per host: carries share 0 across the two hosts.
HierarchicalCpuComm Make(Log* log, bool concurrent) {
  const HostPlan plan = PlanHosts({"a", "a", "b", "b"}, 0);
  return HierarchicalCpuComm(std::make_shared<RecordingComm>("flat", 4, log),
                             std::make_unique<RecordingComm>("local", 2, log),
                             std::make_unique<RecordingComm>("cross", 2, log), plan, concurrent,
                             kChunkBytes, kMinBytes);
}

Status Note(Log* log, const char* what, int64_t off, int64_t n, int64_t count, int64_t* covered) {
  EXPECT_EQ(off, *covered) << what << ": pieces out of order";
  EXPECT_GT(n, 0);
  EXPECT_LE(off + n, count);
  *covered = off + n;
  log->Add(what, off);
  return Status::OK();
}

TEST(HierarchicalStaging, SmallAllreducesStayFlat) {
  Log log;
  HierarchicalCpuComm comm = Make(&log, true);
  std::vector<float> buf(500);  // 2000 bytes < kMinBytes
  int64_t filled = 0, drained = 0;
  AllreduceOptions args(buf.data(), 500, DataType::kFloat32, ReduceOp::kSum);
  args.fill = [&](int64_t o, int64_t n) { return Note(&log, "fill", o, n, 500, &filled); };
  args.drain = [&](int64_t o, int64_t n) { return Note(&log, "drain", o, n, 500, &drained); };
  ASSERT_TRUE(comm.Allreduce(args).ok());
  std::vector<std::string> seen;
  for (const Event& e : log.events) seen.push_back(e.what);
  EXPECT_EQ(seen, (std::vector<std::string>{"fill", "flat allreduce", "drain"}));
  EXPECT_EQ(filled, 500);
  EXPECT_EQ(drained, 500);
}

TEST(HierarchicalStaging, LargeAllreducesFillAndDrainEachChunkAroundItsSteps) {
  for (bool concurrent : {false, true}) {
    Log log;
    HierarchicalCpuComm comm = Make(&log, concurrent);
    const int64_t count = 1000;  // 4000 bytes: chunks of 256, 256, 256, 232 floats
    std::vector<float> buf(count);
    const auto base = reinterpret_cast<intptr_t>(buf.data());
    int64_t filled = 0, drained = 0;
    AllreduceOptions args(buf.data(), count, DataType::kFloat32, ReduceOp::kSum);
    args.fill = [&](int64_t o, int64_t n) { return Note(&log, "fill", o, n, count, &filled); };
    args.drain = [&](int64_t o, int64_t n) { return Note(&log, "drain", o, n, count, &drained); };
    ASSERT_TRUE(comm.Allreduce(args).ok());
    EXPECT_EQ(filled, count);
    EXPECT_EQ(drained, count);
    // Position of the first event `what` of chunk c (fill/drain: by element
    // offset; reduce-scatter and allgather: by the buffer address).
    auto pos = [&](const std::string& what, int64_t c) {
      for (size_t i = 0; i < log.events.size(); ++i) {
        const Event& e = log.events[i];
        const bool stage = what == "fill" || what == "drain";
        if (e.what == what && e.at == (stage ? c * 256 : base + c * kChunkBytes)) {
          return static_cast<int>(i);
        }
      }
      ADD_FAILURE() << what << " of chunk " << c << " not recorded";
      return -1;
    };
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_LT(pos("fill", c), pos("local reducescatter", c)) << c;
      EXPECT_LT(pos("local allgather", c), pos("drain", c)) << c;
      if (concurrent && c < 3) {
        EXPECT_LT(pos("fill", c + 1), pos("drain", c)) << c;
      }
    }
    for (const Event& e : log.events) EXPECT_NE(e.what, "flat allreduce");
  }
}

}  // namespace
}  // namespace hvd
