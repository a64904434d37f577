// GlooComm in one process: every Comm method, every dtype x op, odd group
// sizes, empty buffers, splits, and failure modes (peer gone, timeout).
#include "core/backends/gloo/gloo_comm.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/backends/tcp/tcp_channel.h"
#include "core/common/half.h"
#include "tests/gloo/gloo_test_util.h"

namespace hvd {
namespace {

using testing::Comms;
using testing::MakeComms;
using testing::RunAll;

// bool is absent: the C API reduces it with max/min (a byte's or/and),
// which kUInt8 covers here.
const DataType kAllTypes[] = {DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                              DataType::kInt32,    DataType::kInt64,   DataType::kFloat16,
                              DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// Values are small integers, exact in every type, so results are exact.
std::vector<unsigned char> Encode(DataType dt, const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * DataTypeSize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char* p = out.data() + i * DataTypeSize(dt);
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (dt) {
      case DataType::kUInt8:
        put(static_cast<uint8_t>(v[i]));
        break;
      case DataType::kInt8:
        put(static_cast<int8_t>(v[i]));
        break;
      case DataType::kInt16:
        put(static_cast<int16_t>(v[i]));
        break;
      case DataType::kBool:
        put(static_cast<uint8_t>(v[i] != 0));
        break;
      case DataType::kInt32:
        put(static_cast<int32_t>(v[i]));
        break;
      case DataType::kInt64:
        put(static_cast<int64_t>(v[i]));
        break;
      case DataType::kFloat16:
        put(FloatToFloat16(static_cast<float>(v[i])));
        break;
      case DataType::kBFloat16:
        put(FloatToBFloat16(static_cast<float>(v[i])));
        break;
      case DataType::kFloat32:
        put(static_cast<float>(v[i]));
        break;
      case DataType::kFloat64:
        put(v[i]);
        break;
    }
  }
  return out;
}

std::vector<double> Decode(DataType dt, const std::vector<unsigned char>& bytes) {
  const size_t n = bytes.size() / DataTypeSize(dt);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = bytes.data() + i * DataTypeSize(dt);
    auto get = [p](auto x) {
      std::memcpy(&x, p, sizeof(x));
      return x;
    };
    switch (dt) {
      case DataType::kUInt8:
        out[i] = get(uint8_t{});
        break;
      case DataType::kInt8:
        out[i] = get(int8_t{});
        break;
      case DataType::kInt16:
        out[i] = get(int16_t{});
        break;
      case DataType::kBool:
        out[i] = get(uint8_t{}) != 0;
        break;
      case DataType::kInt32:
        out[i] = get(int32_t{});
        break;
      case DataType::kInt64:
        out[i] = static_cast<double>(get(int64_t{}));
        break;
      case DataType::kFloat16:
        out[i] = Float16ToFloat(get(uint16_t{}));
        break;
      case DataType::kBFloat16:
        out[i] = BFloat16ToFloat(get(uint16_t{}));
        break;
      case DataType::kFloat32:
        out[i] = get(float{});
        break;
      case DataType::kFloat64:
        out[i] = get(double{});
        break;
    }
  }
  return out;
}

// Rank r's element i, in {1, 2, 3}: with 4 ranks the product stays <= 81
// (fits int8) and every rank differs from its neighbours.
double Value(int rank, int64_t i) {
  return static_cast<double>((i + rank) % 3 + 1);
}

double Expected(ReduceOp op, int size, int64_t i) {
  double acc = Value(0, i);
  for (int r = 1; r < size; ++r) {
    const double v = Value(r, i);
    switch (op) {
      case ReduceOp::kSum:
        acc += v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kProduct:
        acc *= v;
        break;
      default:
        break;
    }
  }
  return acc;
}

std::string Name(DataType dt, ReduceOp op, int64_t count) {
  return std::string(DataTypeName(dt)) + "/" + ReduceOpName(op) + "/n=" + std::to_string(count);
}

class GlooSizes : public ::testing::TestWithParam<int> {};

TEST_P(GlooSizes, AllreduceEveryTypeAndOp) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    EXPECT_EQ(c.size(), n);
    EXPECT_STREQ(c.backend_name(), "GLOO");
    for (DataType dt : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1001}}) {
          std::vector<double> mine(count);
          for (int64_t i = 0; i < count; ++i) mine[i] = Value(c.rank(), i);
          std::vector<unsigned char> buf = Encode(dt, mine);
          Status s = c.Allreduce({buf.data(), count, dt, op});
          ASSERT_TRUE(s.ok()) << Name(dt, op, count) << ": " << s.message();
          std::vector<double> got = Decode(dt, buf);
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(got[i], Expected(op, n, i)) << Name(dt, op, count) << " i=" << i;
          }
        }
      }
    }
  });
}

// Allreduces up to 64 KiB run Gloo's bcube, larger ones its ring: both sides
// of that threshold, with fewer elements than ranks, at rank counts that are
// not powers of 2 (bcube then mixes group sizes) and at 8.
class GlooAlgorithms : public ::testing::TestWithParam<int> {};

TEST_P(GlooAlgorithms, AllreduceAroundTheBcubeThreshold) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    for (DataType dt : {DataType::kFloat32, DataType::kInt8}) {
      const int64_t limit = 64 * 1024 / static_cast<int64_t>(DataTypeSize(dt));
      for (int64_t count : {int64_t{1}, int64_t{5}, limit, limit + 1}) {
        std::vector<double> mine(count);
        for (int64_t i = 0; i < count; ++i) mine[i] = Value(c.rank(), i);
        std::vector<unsigned char> buf = Encode(dt, mine);
        Status s = c.Allreduce({buf.data(), count, dt, ReduceOp::kMax});
        ASSERT_TRUE(s.ok()) << Name(dt, ReduceOp::kMax, count) << ": " << s.message();
        std::vector<double> got = Decode(dt, buf);
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(got[i], Expected(ReduceOp::kMax, n, i)) << Name(dt, ReduceOp::kMax, count);
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooAlgorithms, ::testing::Values(3, 6, 8));

ControlChannelOptions Opts() {
  ControlChannelOptions o;
  o.timeout_s = 10;
  return o;
}

std::string Payload(int rank) {
  // Rank 1 contributes nothing: empty strings must survive every path.
  if (rank == 1) return std::string();
  return std::string(static_cast<size_t>(rank * 1000 + 3), static_cast<char>('a' + rank));
}

// The negotiation channel (TCP, a star around rank 0): every member's
// messages reach the coordinator in order, the coordinator reaches every
// member, and nothing arrives twice.
TEST_P(GlooSizes, ControlChannelStar) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    std::unique_ptr<ControlChannel> ch;
    Status s = c.OpenControlChannel(Opts(), &ch);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(ch->rank(), c.rank());
    ASSERT_FALSE(ch->needs_polling());
    auto receive = [&](size_t want, std::vector<ChannelMessage>* got) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (got->size() < want && std::chrono::steady_clock::now() < until) {
        ASSERT_TRUE(ch->Receive(got).ok());
      }
    };
    if (c.rank() == 0) {
      std::vector<ChannelMessage> got;
      receive(static_cast<size_t>(2 * (n - 1)), &got);
      ASSERT_EQ(got.size(), static_cast<size_t>(2 * (n - 1)));
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (const auto& m : got) {
        ASSERT_FALSE(m.lost);
        EXPECT_EQ(m.bytes, Payload(m.from) + "#" + std::to_string(seen[m.from]++));
      }
      for (int r = 1; r < n; ++r) ASSERT_TRUE(ch->Send(r, "to " + std::to_string(r)).ok());
    } else {
      ASSERT_TRUE(ch->Send(0, Payload(c.rank()) + "#0").ok());
      ASSERT_TRUE(ch->Send(0, Payload(c.rank()) + "#1").ok());
      std::vector<ChannelMessage> got;
      receive(1, &got);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].from, 0);
      EXPECT_EQ(got[0].bytes, "to " + std::to_string(c.rank()));
    }
  });
}

// A member that goes away is reported once, as a lost link naming it.
TEST(GlooComm, ControlChannelReportsALostMember) {
  Comms comms = MakeComms(3);
  std::vector<std::unique_ptr<ControlChannel>> channels(3);
  RunAll(comms, [&](GlooComm& c) {
    ASSERT_TRUE(c.OpenControlChannel(Opts(), &channels[static_cast<size_t>(c.rank())]).ok());
  });
  channels[0]->SetPeerNames({"rank 0 (host a)", "rank 1 (host b)", "rank 2 (host c)"});
  channels[2].reset();
  std::vector<ChannelMessage> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.empty() && std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(channels[0]->Receive(&got).ok());
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].lost);
  EXPECT_EQ(got[0].from, 2);
  EXPECT_NE(got[0].bytes.find("rank 2 (host c, 127.0.0.1:"), std::string::npos) << got[0].bytes;
  EXPECT_EQ(channels[0]->Send(2, "x").code(), Code::kPeerLost);
  EXPECT_TRUE(channels[0]->Send(1, "still here").ok());
}

// A coordinator that cannot listen fails the set-up on every rank at once,
// with the same verdict, so that a backend can fall back to its own channel
// together (MPI does).
TEST(GlooComm, ControlChannelSetUpFailsEverywhereTogether) {
  Comms comms = MakeComms(3);
  RunAll(comms, [&](GlooComm& c) {
    std::unique_ptr<ControlChannel> ch;
    bool unreachable = false;
    // TEST-NET-3: not an address of this machine, so bind() fails.
    const auto t0 = std::chrono::steady_clock::now();
    Status s = TcpChannel::Create(&c, "203.0.113.7", 10, &ch, &unreachable);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(s.code(), Code::kBackend);
    EXPECT_TRUE(unreachable);
    EXPECT_EQ(ch, nullptr);
    EXPECT_EQ(s.message().rfind("control channel: the coordinator (rank 0) cannot listen", 0), 0u)
        << s.message();
    // The Comm is still usable, and a second try on a good address works.
    ASSERT_TRUE(TcpChannel::Create(&c, "127.0.0.1", 10, &ch, &unreachable).ok());
    EXPECT_FALSE(unreachable);
    EXPECT_EQ(ch->description().rfind("TCP, coordinator at 127.0.0.1:", 0), 0u)
        << ch->description();
  });
}

TEST_P(GlooSizes, BroadcastAndAllgatherBytes) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    for (int root = 0; root < n; ++root) {
      std::string b = c.rank() == root ? Payload(root) + "!" : "junk";
      ASSERT_TRUE(BroadcastBytes(c, &b, root).ok());
      EXPECT_EQ(b, Payload(root) + "!");
    }
    std::string empty = c.rank() == 0 ? "" : "junk";
    ASSERT_TRUE(BroadcastBytes(c, &empty, 0).ok());
    EXPECT_EQ(empty, "");
    std::vector<std::string> all;
    ASSERT_TRUE(AllgatherBytes(c, Payload(c.rank()), &all).ok());
    ASSERT_EQ(all.size(), static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], Payload(r));
  });
}

TEST_P(GlooSizes, AllgathervUnevenAndEmpty) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    std::vector<int64_t> bytes(n);
    int64_t total = 0;
    for (int r = 0; r < n; ++r) total += bytes[r] = (r == 1 ? 0 : 5 * r + 2);
    std::string mine(static_cast<size_t>(bytes[c.rank()]), static_cast<char>('A' + c.rank()));
    std::string out(static_cast<size_t>(total), '?');
    ASSERT_TRUE(c.Allgatherv(mine.data(), &out[0], bytes).ok());
    std::string want;
    for (int r = 0; r < n; ++r) want += std::string(static_cast<size_t>(bytes[r]), 'A' + r);
    EXPECT_EQ(out, want);
    // Nothing anywhere: a no-op that must not touch Gloo's zero-size paths.
    ASSERT_TRUE(c.Allgatherv(nullptr, nullptr, std::vector<int64_t>(n, 0)).ok());
    EXPECT_EQ(c.Allgatherv(nullptr, nullptr, std::vector<int64_t>(n + 1, 0)).code(),
              Code::kInvalidArgument);
  });
}

TEST_P(GlooSizes, BroadcastRaw) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    const int root = n - 1;
    std::vector<int32_t> v(3000, c.rank() == root ? 0 : -1);
    if (c.rank() == root) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7);
    }
    ASSERT_TRUE(c.Broadcast(v.data(), static_cast<int64_t>(v.size() * 4), root).ok());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], static_cast<int32_t>(i * 7));
    EXPECT_TRUE(c.Broadcast(nullptr, 0, 0).ok());
    EXPECT_EQ(c.Broadcast(v.data(), 4, -1).code(), Code::kInvalidArgument);
  });
}

TEST_P(GlooSizes, AlltoallvUneven) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    // Rank s sends (s + d) % 3 bytes of value 16*s+d to rank d (some zero).
    auto count = [](int s, int d) { return static_cast<int64_t>((s + d) % 3); };
    std::vector<int64_t> send(n), recv(n);
    std::string in, want;
    for (int d = 0; d < n; ++d) {
      send[d] = count(c.rank(), d);
      in += std::string(static_cast<size_t>(send[d]), static_cast<char>(16 * c.rank() + d));
    }
    for (int s = 0; s < n; ++s) {
      recv[s] = count(s, c.rank());
      want += std::string(static_cast<size_t>(recv[s]), static_cast<char>(16 * s + c.rank()));
    }
    std::string out(want.size(), '?');
    Status st = c.Alltoallv(in.data(), send, &out[0], recv);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(out, want);
  });
}

TEST_P(GlooSizes, ReducescatterUneven) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  RunAll(comms, [&](GlooComm& c) {
    for (DataType dt : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        std::vector<int64_t> counts(n);
        int64_t total = 0;
        for (int r = 0; r < n; ++r) total += counts[r] = (r == 1 ? 0 : r + 2);
        std::vector<double> mine(total);
        for (int64_t i = 0; i < total; ++i) mine[i] = Value(c.rank(), i);
        std::vector<unsigned char> in = Encode(dt, mine);
        std::vector<unsigned char> out(counts[c.rank()] * DataTypeSize(dt));
        Status s = c.Reducescatter(in.data(), out.data(), counts, dt, op);
        ASSERT_TRUE(s.ok()) << Name(dt, op, total) << ": " << s.message();
        int64_t offset = 0;
        for (int r = 0; r < c.rank(); ++r) offset += counts[r];
        std::vector<double> got = Decode(dt, out);
        for (int64_t i = 0; i < counts[c.rank()]; ++i) {
          ASSERT_EQ(got[i], Expected(op, n, offset + i)) << Name(dt, op, total);
        }
      }
    }
  });
}

TEST_P(GlooSizes, Barrier) {
  const int n = GetParam();
  Comms comms = MakeComms(n);
  std::atomic<int> arrived{0};
  RunAll(comms, [&](GlooComm& c) {
    if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    arrived++;
    ASSERT_TRUE(c.Barrier().ok());
    // Nobody leaves before everyone (including the late rank 0) arrived.
    EXPECT_EQ(arrived.load(), n);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooSizes, ::testing::Values(1, 2, 3, 4));

TEST(GlooComm, Float16AndBFloat16RoundToNearestEven) {
  Comms comms = MakeComms(2);
  RunAll(comms, [&](GlooComm& c) {
    // 1 + 2^-11 is halfway between float16 1.0 (0x3c00) and its successor
    // (0x3c01): ties go to the even 0x3c00. 1 + 3*2^-11 is halfway between
    // 0x3c01 and 0x3c02: even is 0x3c02. Same idea for bfloat16 at 2^-8.
    // Rank 1's addends are representable: 2^-11 = 0x1000, 3*2^-11 = 0x1600.
    std::vector<uint16_t> h = c.rank() == 0 ? std::vector<uint16_t>{0x3c00, 0x3c00, 0x7bff}
                                            : std::vector<uint16_t>{0x1000, 0x1600, 0x4c00};
    ASSERT_TRUE(c.Allreduce({h.data(), 3, DataType::kFloat16, ReduceOp::kSum}).ok());
    EXPECT_EQ(h, (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7c00}));  // 65504+16 -> inf
    // bfloat16: 2^-8 = 0x3b80, 3*2^-8 = 0x3c40.
    std::vector<uint16_t> b = c.rank() == 0 ? std::vector<uint16_t>{0x3f80, 0x3f80}
                                            : std::vector<uint16_t>{0x3b80, 0x3c40};
    ASSERT_TRUE(c.Allreduce({b.data(), 2, DataType::kBFloat16, ReduceOp::kSum}).ok());
    EXPECT_EQ(b, (std::vector<uint16_t>{0x3f80, 0x3f82}));
  });
}

TEST(GlooComm, InvalidArgumentsAreErrorsNotCrashes) {
  Comms comms = MakeComms(2);
  RunAll(comms, [&](GlooComm& c) {
    int64_t x = 1;
    EXPECT_EQ(c.Allreduce({&x, 1, DataType::kInt64, ReduceOp::kAverage}).code(),
              Code::kInvalidArgument);
    EXPECT_EQ(c.Allreduce({&x, -1, DataType::kInt64, ReduceOp::kSum}).code(),
              Code::kInvalidArgument);
    EXPECT_EQ(c.Alltoallv(&x, {0}, &x, {0}).code(), Code::kInvalidArgument);
    std::unique_ptr<Comm> sub;
    EXPECT_EQ(c.Split({1, 0}, "bad", &sub).code(), Code::kInvalidArgument);
    // Invalid arguments never poison the communicator.
    ASSERT_TRUE(c.Allreduce({&x, 1, DataType::kInt64, ReduceOp::kSum}).ok());
    EXPECT_EQ(x, 2);
  });
}

TEST(GlooComm, SplitIntoDisjointAndNestedGroups) {
  Comms comms = MakeComms(4);
  RunAll(comms, [&](GlooComm& c) {
    const bool odd = c.rank() % 2 == 1;
    std::unique_ptr<Comm> sub;
    Status s =
        c.Split(odd ? std::vector<int>{1, 3} : std::vector<int>{0, 2}, odd ? "odd" : "even", &sub);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(sub->size(), 2);
    EXPECT_EQ(sub->rank(), c.rank() / 2);
    int32_t v = c.rank();
    ASSERT_TRUE(sub->Allreduce({&v, 1, DataType::kInt32, ReduceOp::kSum}).ok());
    EXPECT_EQ(v, odd ? 4 : 2);
    // A split of the split, and a group of one (purely local).
    std::unique_ptr<Comm> solo;
    ASSERT_TRUE(sub->Split({sub->rank()}, "solo" + std::to_string(sub->rank()), &solo).ok());
    EXPECT_EQ(solo->size(), 1);
    EXPECT_EQ(solo->rank(), 0);
    int32_t w = 5;
    ASSERT_TRUE(solo->Allreduce({&w, 1, DataType::kInt32, ReduceOp::kProduct}).ok());
    EXPECT_EQ(w, 5);
    // Non-members are refused; the parent still works afterwards.
    std::unique_ptr<Comm> none;
    EXPECT_EQ(c.Split({(c.rank() + 1) % 4}, "other", &none).code(), Code::kInvalidArgument);
    int64_t all = 1;
    ASSERT_TRUE(c.Allreduce({&all, 1, DataType::kInt64, ReduceOp::kSum}).ok());
    EXPECT_EQ(all, 4);
  });
}

TEST(GlooComm, SingleRankIsLocalCopy) {
  Comms comms = MakeComms(1);
  GlooComm& c = *comms[0];
  std::string in = "hello", out(5, '?');
  ASSERT_TRUE(c.Allgatherv(in.data(), &out[0], {5}).ok());
  EXPECT_EQ(out, "hello");
  out.assign(5, '?');
  ASSERT_TRUE(c.Alltoallv(in.data(), {5}, &out[0], {5}).ok());
  EXPECT_EQ(out, "hello");
  float f[2] = {1.5f, 2.5f}, g = 0;
  ASSERT_TRUE(c.Reducescatter(f, &g, {1}, DataType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(g, 1.5f);
  std::vector<std::string> all;
  ASSERT_TRUE(AllgatherBytes(c, "me", &all).ok());
  EXPECT_EQ(all, std::vector<std::string>{"me"});
  EXPECT_TRUE(c.Barrier().ok());
}

TEST(GlooComm, PeerThatClosesYieldsPeerLostNotHang) {
  Comms comms = MakeComms(2, std::chrono::seconds(10));
  const auto start = std::chrono::steady_clock::now();
  Status s0;
  testing::ForEachRank(2, [&](int r) {
    if (r == 1) {
      comms[1].reset();  // closes rank 1's sockets while rank 0 waits for it
      return;
    }
    std::vector<float> v(1 << 16, 1.0f);
    s0 = comms[0]->Allreduce(
        {v.data(), static_cast<int64_t>(v.size()), DataType::kFloat32, ReduceOp::kSum});
  });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s0.code(), Code::kPeerLost) << s0.message();
  EXPECT_NE(s0.message().find("Gloo allreduce"), std::string::npos) << s0.message();
  EXPECT_LT(secs, 9.0) << "a closed peer must be detected before the timeout";
  // The communicator refuses further work with the same code, at once.
  int32_t x = 1;
  Status again = comms[0]->Allreduce({&x, 1, DataType::kInt32, ReduceOp::kSum});
  EXPECT_EQ(again.code(), Code::kPeerLost);
  EXPECT_NE(again.message().find("earlier error"), std::string::npos) << again.message();
}

TEST(GlooComm, SilentPeerYieldsTimeout) {
  Comms comms = MakeComms(2, std::chrono::milliseconds(500));
  Status s0;
  const auto start = std::chrono::steady_clock::now();
  testing::ForEachRank(2, [&](int r) {
    if (r == 1) {
      // Stays connected but never joins; keeps its context alive until
      // rank 0 has given up.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return;
    }
    std::vector<int32_t> v(10, 1);
    s0 = comms[0]->Allreduce({v.data(), 10, DataType::kInt32, ReduceOp::kSum});
  });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s0.code(), Code::kTimeout) << s0.message();
  EXPECT_LT(secs, 5.0);
}

}  // namespace
}  // namespace hvd
