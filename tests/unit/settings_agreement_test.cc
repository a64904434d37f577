// The settings every rank must share (core/runtime/settings_agreement.h):
// what a rank sends, and the verdict on every rank's.
#include "core/runtime/settings_agreement.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/config.h"

namespace hvd {
namespace {

std::string Encoded(const Config& c, const std::string& cpu = "mpi") {
  return EncodeSettings(SettingsRanksShare(c, cpu));
}

TEST(SettingsAgreement, RanksThatAgreePass) {
  const Config c;
  EXPECT_TRUE(CompareSettings({Encoded(c)}, 0).ok());
  EXPECT_TRUE(CompareSettings({Encoded(c), Encoded(c), Encoded(c)}, 2).ok());
  Config slow = c;  // a rank's own timing and bounds may differ
  slow.cycle_time_ms = 5;
  slow.op_timeout_seconds = 10;
  slow.stall_check_seconds = 1;
  slow.log_level = LogLevel::kDebug;
  EXPECT_TRUE(CompareSettings({Encoded(c), Encoded(slow)}, 1).ok());
}

TEST(SettingsAgreement, NamesTheSettingEachValueAndItsRanks) {
  Config c, other = c;
  other.fusion_threshold_bytes = 0;
  const Status s = CompareSettings({Encoded(c), Encoded(other), Encoded(c), Encoded(other)}, 3);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "ranks disagree on HVD_FUSION_THRESHOLD: 134217728 on ranks 0, 2, 0 on ranks 1, 3 "
            "(this is rank 3); every rank must run with the same value, or their collectives "
            "would wait for each other forever");
}

TEST(SettingsAgreement, EverySettingThatRoutesCollectivesIsCompared) {
  const Config c;
  const std::vector<std::pair<std::string, std::function<void(Config*)>>> cases = {
      {"HVD_FUSION_THRESHOLD: 134217728 on rank 0, 65536",
       [](Config* x) { x->fusion_threshold_bytes = 65536; }},
      {"HVD_ALLREDUCE_CHUNK_BYTES: 4194304 on rank 0, 4096",
       [](Config* x) { x->allreduce_chunk_bytes = 4096; }},
      {"HVD_CACHE_CAPACITY: 1024 (growing to 16384) on rank 0, 1024 on",
       [](Config* x) { x->cache_capacity_fixed = true; }},
      {"HVD_CACHE_CAPACITY: 1024 (growing to 16384) on rank 0, 0 on",
       [](Config* x) { x->cache_capacity = 0; }},
      {"HVD_SHARED_MEMORY: 1 on rank 0, 0", [](Config* x) { x->shared_memory = false; }},
      {"HVD_CONTROL_CHANNEL: auto on rank 0, tcp",
       [](Config* x) { x->control_channel = ControlChannelChoice::kTcp; }},
      {"HVD_P2P: 1 on rank 0, 0", [](Config* x) { x->p2p = false; }},
      {"HVD_HIERARCHICAL_ALLREDUCE: 0 on rank 0, 1",
       [](Config* x) { x->hierarchical_allreduce = true; }},
      {"HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES: -1 on rank 0, 0",
       [](Config* x) { x->hierarchical_allreduce_min_bytes = 0; }},
      {"HVD_HIERARCHICAL_ALLGATHER: 0 on rank 0, 1",
       [](Config* x) { x->hierarchical_allgather = true; }},
      {"HVD_HIERARCHICAL_CROSS: auto on rank 0, backend",
       [](Config* x) { x->hierarchical_cross = CrossTransport::kBackend; }},
      {"HVD_GPU_OPERATIONS: auto on rank 0, staging",
       [](Config* x) { x->gpu_operations = GpuOperations::kStaging; }},
  };
  for (const auto& k : cases) {
    Config other = c;
    k.second(&other);
    const Status s = CompareSettings({Encoded(c), Encoded(other)}, 0);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << k.first;
    EXPECT_NE(s.message().find("ranks disagree on " + k.first), std::string::npos)
        << k.first << "\n"
        << s.message();
  }
  const Status cpu = CompareSettings({Encoded(c, "mpi"), Encoded(c, "gloo")}, 1);
  EXPECT_NE(
      cpu.message().find("HVD_CPU_OPERATIONS: mpi on rank 0, gloo on rank 1 (this is rank 1)"),
      std::string::npos)
      << cpu.message();
}

TEST(SettingsAgreement, AnotherBuildIsNamedBeforeWhatItComparesOtherwise) {
  const Config c;
  // A later build: its version first, one setting more, and a value that
  // differs too (the version is named, not the value).
  std::string later = "libhvd version=9.9.9\n" + Encoded(c).substr(Encoded(c).find('\n') + 1) +
                      "HVD_SOMETHING_NEW=1\n";
  later.replace(later.find("HVD_P2P=1"), 9, "HVD_P2P=0");
  const Status s = CompareSettings({Encoded(c), later}, 0);
  EXPECT_EQ(s.message().rfind("ranks disagree on libhvd version: " HVD_VERSION_STRING
                              " on rank 0, 9.9.9 on rank 1 (this is rank 0)",
                              0),
            0u)
      << s.message();
  // A setting rank 0 compares and another build does not send.
  const std::string older = Encoded(c).substr(0, Encoded(c).find("HVD_GPU_OPERATIONS"));
  const Status t = CompareSettings({Encoded(c), older}, 1);
  EXPECT_NE(t.message().find("HVD_GPU_OPERATIONS: auto on rank 0, (not compared by its build) "
                             "on rank 1"),
            std::string::npos)
      << t.message();
}

}  // namespace
}  // namespace hvd
