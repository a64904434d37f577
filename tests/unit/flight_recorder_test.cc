// The flight recorder's ring: sizes, wrapping, stale tokens and the dump.
#include "core/observability/flight_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace hvd {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(FlightRecorder, OffRecordsNothing) {
  FlightRecorder fr;
  fr.Reset(0);
  EXPECT_FALSE(fr.on());
  EXPECT_EQ(
      fr.Submit("a", OpType::kAllreduce, 0, 0, DataType::kFloat32, {4}, 16, FlightRecorder::Now()),
      0u);
}

TEST(FlightRecorder, KeepsTheLastOperationsAndIgnoresStaleTokens) {
  FlightRecorder fr;
  fr.Reset(3);  // rounded up to 4
  const auto t = FlightRecorder::Now();
  uint64_t first = 0, last = 0;
  for (int i = 0; i < 6; ++i) {
    last = fr.Submit("op." + std::to_string(i), OpType::kAllreduce, 0, i, DataType::kFloat32,
                     {2, 3}, 24, t);
    if (i == 0) first = last;
  }
  fr.Done(first, Code::kTimeout, t);  // its slot now holds op.4: ignored
  fr.Mark(last, FlightRecorder::kNegotiated, t);
  fr.Done(last, Code::kPeerLost, t);
  const std::string path = ::testing::TempDir() + "/fr." + std::to_string(getpid()) + ".json";
  FlightRecorder::Header h;
  h.rank = 2;
  h.size = 4;
  h.host = "h\"x";
  h.reason = "test";
  ASSERT_TRUE(fr.Dump(path, h).ok());
  const std::string s = Slurp(path);
  std::remove(path.c_str());
  EXPECT_NE(s.find("\"capacity\": 4,"), std::string::npos) << s;
  EXPECT_NE(s.find("\"host\": \"h\\\"x\""), std::string::npos) << s;  // escaped
  EXPECT_EQ(s.find("\"op.1\""), std::string::npos) << s;              // overwritten
  for (const char* kept : {"\"op.2\"", "\"op.3\"", "\"op.4\"", "\"op.5\""}) {
    EXPECT_NE(s.find(kept), std::string::npos) << kept << " in " << s;
  }
  EXPECT_NE(s.find("\"shape\": [2, 3]"), std::string::npos) << s;
  // op.4 did not take op.0's outcome; op.5 is done with PEER_LOST (-6).
  const size_t op4 = s.find("\"op.4\"");
  const size_t op5 = s.find("\"op.5\"");
  EXPECT_NE(s.substr(op4, op5 - op4).find("\"state\": \"submitted\""), std::string::npos) << s;
  EXPECT_NE(s.substr(op5).find("\"state\": \"done\", \"status\": -6"), std::string::npos) << s;
}

TEST(FlightRecorder, LongNamesAreCutAndUnwritablePathsFail) {
  FlightRecorder fr;
  fr.Reset(2);
  fr.Submit(std::string(500, 'n'), OpType::kBroadcast, 1, 0, DataType::kInt64, {}, 8,
            FlightRecorder::Now());
  const std::string path = ::testing::TempDir() + "/fr2." + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(fr.Dump(path, {}).ok());
  const std::string s = Slurp(path);
  std::remove(path.c_str());
  EXPECT_NE(s.find("\"" + std::string(FlightRecorder::kNameBytes - 1, 'n') + "\""),
            std::string::npos);
  EXPECT_EQ(s.find(std::string(FlightRecorder::kNameBytes, 'n')), std::string::npos);
  EXPECT_FALSE(fr.Dump("/nonexistent-dir/x.json", {}).ok());
}

}  // namespace
}  // namespace hvd
