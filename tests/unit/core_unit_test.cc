// Unit tests of the core pieces that need no peers: the negotiation wire
// format, the response cache, fusion planning, configuration parsing and reductions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/common/config.h"
#include "core/common/dtype_dispatch.h"
#include "core/common/half.h"
#include "core/common/reduce.h"
#include "core/common/stream_copy.h"
#include "core/coordination/fusion.h"
#include "core/coordination/message.h"
#include "core/coordination/protocol.h"
#include "core/coordination/response_cache.h"
#include "core/coordination/response_rules.h"
#include "core/dataplane/decorators/store_chooser.h"
#include "core/observability/autotune/bayesian_optimizer.h"
#include "core/observability/autotune/gaussian_process.h"

namespace hvd {
namespace {

Request MakeRequest(const std::string& name, std::vector<int64_t> shape,
                    DataType dt = DataType::kFloat32) {
  Request q;
  q.name = name;
  q.shape = std::move(shape);
  q.dtype = dt;
  return q;
}

Response MakeResponse(const std::string& name, int64_t count, DataType dt = DataType::kFloat32,
                      OpType type = OpType::kAllreduce) {
  Response r;
  r.type = type;
  r.names = {name};
  r.sizes = {count};
  r.dtype = dt;
  return r;
}

TEST(Wire, ReportRoundTrip) {
  Report rep;
  rep.shutdown = true;
  rep.epoch = 42;
  rep.hits = {3, 1, 7};
  rep.invalid = {9};
  Request q = MakeRequest("grad/conv1", {64, 3, 7, 7}, DataType::kBFloat16);
  q.rank = 3;
  q.type = OpType::kAlltoall;
  q.splits = {1, 2, 3};
  q.prescale = 0.25;
  q.group = "g";
  q.group_size = 2;
  rep.requests = {q, MakeRequest("b", {})};
  Report out;
  ASSERT_TRUE(DecodeReport(EncodeReport(rep), &out).ok());
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_TRUE(out.shutdown);
  EXPECT_EQ(out.epoch, 42);
  EXPECT_EQ(out.hits, (std::vector<int32_t>{1, 3, 7}));  // a set: dense ones come sorted
  EXPECT_EQ(out.invalid, std::vector<int32_t>{9});
  EXPECT_EQ(out.requests[0].name, "grad/conv1");
  EXPECT_TRUE(out.requests[0].SameParams(q));
  EXPECT_EQ(out.requests[0].rank, 3);
  EXPECT_EQ(out.requests[1].shape.size(), 0u);
}

// Dense slot sets travel as a bitmap (a step of a large model reports
// hundreds of slots): ascending order on decode, and far fewer bytes.
TEST(Wire, DenseSlotsAreABitmap) {
  Report dense, sparse;
  for (int32_t s = 0; s < 1000; ++s) dense.hits.push_back(s);
  sparse.hits = {999};
  const std::string d = EncodeReport(dense);
  EXPECT_LT(d.size(), 200u);
  Report out;
  ASSERT_TRUE(DecodeReport(d, &out).ok());
  EXPECT_EQ(out.hits, dense.hits);
  ASSERT_TRUE(DecodeReport(EncodeReport(sparse), &out).ok());
  EXPECT_EQ(out.hits, sparse.hits);
}

TEST(Wire, DecisionRoundTrip) {
  Decision d;
  d.seq = 7;
  Action run;
  run.kind = Action::kRun;
  run.slot = 4;
  run.response = MakeResponse("x", 10);
  run.response.error_code = Code::kMismatch;
  run.response.error = "bad";
  run.response.joined_ranks = {2};
  Action cached;
  cached.kind = Action::kRunCached;
  cached.slots = {0, 2, 5};
  cached.ranks = {1};
  Action params;
  params.kind = Action::kParams;
  params.params.fusion_threshold_bytes = 1 << 20;
  params.params.cycle_time_ms = 2.5;
  params.params.allreduce_chunk_bytes = 4096;
  Action erase;
  erase.kind = Action::kErase;
  erase.slot = 3;
  Action stop;
  stop.kind = Action::kShutdown;
  stop.ranks = {1, 2};
  Action lost;
  lost.kind = Action::kPeerLost;
  lost.ranks = {3};
  lost.error = "gone";
  d.actions = {run, cached, params, erase, stop, lost};
  Decision out;
  ASSERT_TRUE(DecodeDecision(EncodeDecision(d), &out).ok());
  EXPECT_EQ(out.seq, 7);
  ASSERT_EQ(out.actions.size(), 6u);
  EXPECT_EQ(out.actions[0].slot, 4);
  EXPECT_EQ(out.actions[0].response.error, "bad");
  EXPECT_EQ(out.actions[0].response.joined_ranks, std::vector<int32_t>{2});
  EXPECT_EQ(out.actions[1].slots, (std::vector<int32_t>{0, 2, 5}));
  EXPECT_EQ(out.actions[1].ranks, std::vector<int32_t>{1});
  EXPECT_EQ(out.actions[2].params.cycle_time_ms, 2.5);
  EXPECT_EQ(out.actions[2].params.allreduce_chunk_bytes, 4096);
  EXPECT_EQ(out.actions[3].slot, 3);
  EXPECT_EQ(out.actions[4].ranks, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(out.actions[5].error, "gone");
}

TEST(Wire, EveryTruncationAndCorruptionIsRejected) {
  Report rep;
  rep.hits = {1, 2};
  rep.requests = {MakeRequest("abc", {2, 3}), MakeRequest("d", {5})};
  const std::string bytes = EncodeReport(rep);
  Report out;
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeReport(bytes.substr(0, n), &out).ok()) << "prefix " << n;
  }
  EXPECT_FALSE(DecodeReport(bytes + "x", &out).ok());
  // Flip every byte: must never crash (it may or may not decode).
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0xff);
    (void)DecodeReport(b, &out);
  }
  Decision d;
  d.seq = 1;
  d.actions.resize(1);
  d.actions[0].response = MakeResponse("x", 3);
  const std::string dbytes = EncodeDecision(d);
  Decision dout;
  for (size_t n = 0; n < dbytes.size(); ++n) {
    EXPECT_FALSE(DecodeDecision(dbytes.substr(0, n), &dout).ok()) << "prefix " << n;
  }
}

TEST(ResponseCache, HitMissInvalidAndClockReplacement) {
  ResponseCache cache(2);
  Request a = MakeRequest("a", {4}), b = MakeRequest("b", {4}), c = MakeRequest("c", {4});
  int pos = -1;
  EXPECT_EQ(cache.Lookup(a, &pos), ResponseCache::State::kMiss);
  int evicted = -2;
  EXPECT_EQ(cache.Put(MakeResponse("a", 4), a, &evicted), 0);
  EXPECT_EQ(evicted, -1);
  EXPECT_EQ(cache.Put(MakeResponse("b", 4), b, &evicted), 1);
  EXPECT_EQ(cache.Lookup(a, &pos), ResponseCache::State::kHit);
  EXPECT_EQ(pos, 0);
  Request a2 = MakeRequest("a", {5});
  EXPECT_EQ(cache.Lookup(a2, &pos), ResponseCache::State::kInvalid);
  // Full: a and b were just filled, so the hand passes each once and c
  // stays uncached; its coming back counts.
  EXPECT_EQ(cache.Put(MakeResponse("c", 4), c, &evicted), -1);
  EXPECT_EQ(evicted, -1);
  EXPECT_EQ(cache.recurring_misses(), 0);
  EXPECT_EQ(cache.Put(MakeResponse("c", 4), c, &evicted), -1);
  EXPECT_EQ(cache.recurring_misses(), 1);
  cache.Touch(0);  // a hit: the hand passes it once more
  EXPECT_EQ(cache.Put(MakeResponse("c", 4), c, &evicted), -1);
  EXPECT_EQ(cache.Put(MakeResponse("c", 4), c, &evicted), 1);  // b: neither hit nor new
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(cache.recurring_misses(), 3);
  EXPECT_EQ(cache.Lookup(b, &pos), ResponseCache::State::kMiss);
  EXPECT_EQ(cache.Lookup(c, &pos), ResponseCache::State::kHit);
  EXPECT_EQ(pos, 1);
  EXPECT_EQ(cache.Lookup(a, &pos), ResponseCache::State::kHit);
  cache.Erase(0);
  EXPECT_EQ(cache.Lookup(a, &pos), ResponseCache::State::kMiss);
  EXPECT_EQ(cache.Put(MakeResponse("a", 4), a, &evicted), 0);  // a free slot first
  EXPECT_EQ(evicted, -1);
  EXPECT_EQ(cache.size(), 2u);
}

// A step of `names` in order, as the coordinator drives the cache: a hit
// touches the slot, a miss puts the response. Returns the hits.
int CacheStep(ResponseCache* cache, const std::vector<std::string>& names) {
  int hits = 0;
  for (const std::string& n : names) {
    int pos = -1, evicted = -1;
    const Request q = MakeRequest(n, {1});
    if (cache->Lookup(q, &pos) == ResponseCache::State::kHit) {
      cache->Touch(pos);
      ++hits;
    } else {
      cache->Put(MakeResponse(n, 1), q, &evicted);
    }
  }
  return hits;
}

std::vector<std::string> Names(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

// More tensors per step than slots, in the same order every step (LRU hits
// none of them): the slots hit every step keep their place, and the
// turned-away tensors coming back say the cache is too small.
TEST(ResponseCache, KeepsSlotsHitEveryStepWhenTensorsOutnumberThem) {
  ResponseCache cache(64);
  const std::vector<std::string> step = Names("t", 96);
  EXPECT_EQ(CacheStep(&cache, step), 0);
  for (int s = 1; s < 6; ++s) EXPECT_EQ(CacheStep(&cache, step), 64) << "step " << s;
  EXPECT_GT(cache.recurring_misses(), 2 * cache.capacity());
  // The default capacity and 1500 tensors: every step's overflow counts.
  ResponseCache dflt(1024);
  const std::vector<std::string> many = Names("t", 1500);
  for (int s = 0; s < 6; ++s) CacheStep(&dflt, many);
  EXPECT_EQ(dflt.recurring_misses(), 5 * (1500 - 1024));
  // Twice as many: some are still hit each step instead of none.
  ResponseCache big(64);
  const std::vector<std::string> twice = Names("t", 128);
  for (int s = 0; s < 3; ++s) CacheStep(&big, twice);
  for (int s = 3; s < 8; ++s) EXPECT_GE(CacheStep(&big, twice), 16) << "step " << s;
}

// Unless the capacity is fixed, a cache whose turned-away tensors come back
// while its slots are in use doubles (up to its maximum), so a step of 150
// tensors on 64 slots is all hits from its fourth step; names used once
// never make it grow.
TEST(ResponseCache, GrowsWhenTurnedAwayTensorsComeBack) {
  ResponseCache cache(64, 1024);
  const std::vector<std::string> step = Names("t", 150);
  EXPECT_EQ(CacheStep(&cache, step), 0);
  for (int s = 1; s < 3; ++s) CacheStep(&cache, step);
  for (int s = 3; s < 6; ++s) EXPECT_EQ(CacheStep(&cache, step), 150) << "step " << s;
  EXPECT_EQ(cache.capacity(), 256);
  EXPECT_EQ(cache.recurring_misses(), 0);
  // At its maximum it turns tensors away and counts them.
  ResponseCache capped(64, 128);
  for (int s = 0; s < 4; ++s) CacheStep(&capped, step);
  EXPECT_EQ(capped.capacity(), 128);
  EXPECT_EQ(CacheStep(&capped, step), 128);
  EXPECT_GT(capped.recurring_misses(), 0);
  // A working set that fits beside a new name per step: no growth.
  ResponseCache fits(64, 1024);
  std::vector<std::string> work = Names("w", 60);
  for (int s = 0; s < 300; ++s) {
    work.push_back("once." + std::to_string(s));
    CacheStep(&fits, work);
    work.pop_back();
  }
  EXPECT_EQ(fits.capacity(), 64);
  // The soak's mix: batches of 1 to 8 names, 30% from a pool of 32 reused
  // names, the rest used once. A reused name that the stream pushes out now
  // and then is no reason to double (growing on every return: 1024 slots).
  ResponseCache mixed(128, 2048);
  std::mt19937 rng(1);
  int64_t unique = 0;
  for (int b = 0; b < 50000; ++b) {
    std::vector<std::string> batch(1 + rng() % 8);
    for (auto& n : batch) {
      n = rng() % 1000 < 300 ? "pool" + std::to_string(rng() % 32) : "u" + std::to_string(unique++);
    }
    CacheStep(&mixed, batch);
  }
  EXPECT_LE(mixed.capacity(), 256);
  // A member grows to the slot the coordinator chose.
  ResponseCache member(64, 1024);
  member.PutAt(200, MakeResponse("far", 1), MakeRequest("far", {1}));
  EXPECT_EQ(member.capacity(), 256);
  int pos = -1;
  EXPECT_EQ(member.Lookup(MakeRequest("far", {1}), &pos), ResponseCache::State::kHit);
  EXPECT_EQ(pos, 200);
  member.PutAt(5000, MakeResponse("beyond", 1), MakeRequest("beyond", {1}));
  EXPECT_EQ(member.capacity(), 256);  // past the maximum: ignored
}

// A new working set replaces an old one that is no longer hit within two
// steps, and one change of working set does not count as too small.
TEST(ResponseCache, ANewWorkingSetTakesOverTheSlots) {
  ResponseCache cache(64);
  const std::vector<std::string> old_set = Names("old", 64), new_set = Names("new", 64);
  for (int s = 0; s < 3; ++s) CacheStep(&cache, old_set);
  EXPECT_EQ(CacheStep(&cache, old_set), 64);
  EXPECT_EQ(CacheStep(&cache, new_set), 0);
  CacheStep(&cache, new_set);
  EXPECT_EQ(CacheStep(&cache, new_set), 64);
  EXPECT_LE(cache.recurring_misses(), 2 * cache.capacity());
}

// Beside a working set that fits, a name used once per step (a counter in
// it, or an unnamed operation): the working set is hit every step and
// nothing recurs, so there is nothing to warn about.
TEST(ResponseCache, NamesUsedOnceNeitherEvictTheWorkingSetNorCount) {
  ResponseCache cache(64);
  std::vector<std::string> step = Names("w", 60);
  for (int s = 0; s < 500; ++s) {
    step.push_back("once." + std::to_string(s));
    const int hits = CacheStep(&cache, step);
    if (s > 0) {
      ASSERT_EQ(hits, 60) << "step " << s;
    }
    step.pop_back();
  }
  EXPECT_EQ(cache.recurring_misses(), 0);
}

// DecideResponse agrees at once when every request matches exactly, and
// otherwise names the first property the ranks disagree on, as before.
TEST(DecideResponse, NamesTheFirstPropertyTheRanksDisagreeOn) {
  auto decide = [](OpType type, auto change) {
    std::vector<Request> qs(3, MakeRequest("x", {4, 3}));
    for (int r = 0; r < 3; ++r) {
      qs[r].type = type;
      qs[r].rank = r;
    }
    change(qs[2]);
    return DecideResponse("x", qs, {}, 3);
  };
  auto same = [](Request&) {};
  const Response ok = decide(OpType::kAllreduce, same);
  EXPECT_EQ(ok.error_code, Code::kOk) << ok.error;
  EXPECT_EQ(ok.sizes, std::vector<int64_t>{12});
  // Scales that print alike agree, as they did before the exact check.
  EXPECT_EQ(decide(OpType::kAllreduce, [](Request& q) { q.prescale = 1.0 + 1e-12; }).error_code,
            Code::kOk);
  EXPECT_EQ(decide(OpType::kAllgather, [](Request& q) { q.shape[0] = 7; }).error_code, Code::kOk);
  EXPECT_EQ(decide(OpType::kBroadcast, [](Request& q) { q.reduce_op = ReduceOp::kMax; }).error_code,
            Code::kOk);
  const std::vector<std::tuple<OpType, std::function<void(Request&)>, std::string>> cases = {
      {OpType::kAllreduce, [](Request& q) { q.dtype = DataType::kFloat64; }, "allreduce dtypes"},
      {OpType::kAllreduce,
       [](Request& q) {
         q.device = {DeviceKind::kCUDA, 0};
       },
       "allreduce devices"},
      {OpType::kAllreduce, [](Request& q) { q.reduce_op = ReduceOp::kMax; },
       "allreduce reduce ops"},
      {OpType::kAllreduce, [](Request& q) { q.postscale = 0.5; },
       "allreduce prescale/postscale factors"},
      {OpType::kBroadcast, [](Request& q) { q.root = 1; }, "broadcast root ranks"},
      {OpType::kAllreduce, [](Request& q) { q.group = "g", q.group_size = 2; }, "groups"},
      {OpType::kAllreduce,
       [](Request& q) {
         q.shape = {3, 4};
       },
       "allreduce tensor shapes"},
      {OpType::kAllgather, [](Request& q) { q.shape[1] = 5; },
       "allgather tensor shapes (beyond dimension 0)"},
      {OpType::kAllreduce, [](Request& q) { q.type = OpType::kBroadcast; }, "operations"},
  };
  for (const auto& [type, change, what] : cases) {
    const Response r = decide(type, change);
    EXPECT_EQ(r.error_code, Code::kMismatch) << what;
    EXPECT_EQ(r.error.rfind("Mismatched " + what + " for tensor 'x': ranks 0, 1: ", 0), 0u)
        << r.error;
  }
}

TEST(Fusion, GroupsCompatibleResponsesUpToThreshold) {
  std::vector<Response> in = {MakeResponse("a", 10), MakeResponse("b", 10, DataType::kFloat64),
                              MakeResponse("c", 10), MakeResponse("d", 30)};
  auto out = FuseResponses(in, 100, 2);  // float32: a(40) + c(40) fit, d(120) does not
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(out[0].sizes, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(out[1].names, std::vector<std::string>{"b"});
  EXPECT_EQ(out[2].names, std::vector<std::string>{"d"});
  EXPECT_EQ(FuseResponses(in, 0, 2).size(), 4u);  // 0 disables fusion
}

TEST(Fusion, LargeTensorsRunAlone) {
  // float32: a 40 B, big 400 B (>= solo 100 B), c 40 B.
  auto out = FuseResponses({MakeResponse("a", 10), MakeResponse("big", 100), MakeResponse("c", 10)},
                           1 << 20, 2, /*solo_bytes=*/100);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(out[1].names, std::vector<std::string>{"big"});
}

TEST(Fusion, NeverFusesErrorsOrDifferentScales) {
  Response e = MakeResponse("e", 1);
  e.error_code = Code::kMismatch;
  Response s = MakeResponse("s", 1);
  s.postscale = 2.0;
  auto out = FuseResponses({MakeResponse("a", 1), e, s, MakeResponse("b", 1)}, 1 << 20, 2);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"a", "b"}));
}

TEST(Fusion, ReducescattersFuseButNotWithAllreduces) {
  auto out = FuseResponses(
      {MakeResponse("r1", 4, DataType::kFloat32, OpType::kReducescatter), MakeResponse("a", 4),
       MakeResponse("r2", 4, DataType::kFloat32, OpType::kReducescatter)},
      1 << 20, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].names, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(out[1].names, std::vector<std::string>{"a"});
}

TEST(Fusion, MemoReusesOnlyTheSameResponsesAndSettings) {
  auto a = std::make_shared<const Response>(MakeResponse("a", 10));
  auto b = std::make_shared<const Response>(MakeResponse("b", 10));
  FusionMemo memo;
  std::vector<ResponsePtr> in = {a, b};
  EXPECT_EQ(memo.Fuse(&in, 1 << 20, 2, 0)[0].names, (std::vector<std::string>{"a", "b"}));
  in = {a, b};
  const std::vector<Response>* first = &memo.Fuse(&in, 1 << 20, 2, 0);
  EXPECT_EQ(first->size(), 1u);
  // A new response object with the same name (a cache slot refilled) is
  // fused again, and so is the same input under another threshold.
  auto b2 = std::make_shared<const Response>(MakeResponse("b", 30, DataType::kFloat64));
  in = {a, b2};
  const auto& changed = memo.Fuse(&in, 1 << 20, 2, 0);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[1].names, std::vector<std::string>{"b"});
  EXPECT_EQ(changed[1].sizes, std::vector<int64_t>{30});
  in = {a, b2};
  EXPECT_EQ(memo.Fuse(&in, 0, 2, 0).size(), 2u);
  in = {a, b};
  EXPECT_EQ(memo.Fuse(&in, 0, 2, 0).size(), 2u);
  in = {a, b};
  EXPECT_EQ(memo.Fuse(&in, 1 << 20, 2, 0).size(), 1u);
}

// The memo fuses into the strings of its last output (names over 15
// characters live on the heap): every call must still give each name whole,
// whatever the lengths and counts of the calls before.
TEST(Fusion, MemoNamesStayRightWhenItsStringsAreReused) {
  auto named = [](const std::string& name) {
    return std::make_shared<const Response>(MakeResponse(name, 4));
  };
  const std::string p = "allreduce.model.features.";
  const std::vector<std::vector<std::string>> calls = {
      {p + "0.weight", p + "1.block.conv.weight", p + "2.bias"},
      {p + "3", "x", p + "4.block.depthwise.conv.weight", p + "5.bias", "y"},
      {p + "6.weight"},
      {"a", "b", p + "7.block.squeeze_excitation.fc1.weight", p + "8.bias"},
  };
  FusionMemo memo;
  for (const auto& names : calls) {
    std::vector<ResponsePtr> in;
    for (const auto& n : names) in.push_back(named(n));
    const auto& out = memo.Fuse(&in, 1 << 20, 2, 0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].names, names);
    EXPECT_EQ(out[0].sizes, std::vector<int64_t>(names.size(), 4));
  }
}

// Each group's first name is copied, not taken from the spares: over many
// steps the spares must stay within one step's names, not grow by a few
// strings a step.
TEST(Fusion, MemoSparesStayBoundedOverManySteps) {
  FusionMemo memo;
  for (int step = 0; step < 1000; ++step) {
    const int n = step % 2 ? 3 : 5;  // decisions split differently step by step
    std::vector<ResponsePtr> in;
    for (int i = 0; i < n; ++i) {
      in.push_back(std::make_shared<const Response>(
          MakeResponse("allreduce.module.layer." + std::to_string(step * 8 + i) + ".weight", 4)));
    }
    ASSERT_EQ(memo.Fuse(&in, 1 << 20, 2, 0)[0].names.size(), static_cast<size_t>(n));
    ASSERT_LE(memo.spare_names(), 5u) << "step " << step;
  }
}

// Lookup compares packed parameters for most requests and whole requests
// for the rest: both must agree with Request::SameParams.
TEST(ResponseCache, LookupAgreesWithSameParams) {
  auto with = [](std::vector<int64_t> shape, auto change) {
    Request q = MakeRequest("t", std::move(shape));
    change(q);
    return q;
  };
  auto same = [](Request&) {};
  const std::vector<std::pair<Request, Request>> cases = {
      {with({2, 3}, same), with({2, 3}, same)},
      {with({2, 3}, same), with({3, 2}, same)},
      {with({2, 3}, same), with({2, 3, 1}, same)},
      {with({1, 2, 3, 4, 5}, same), with({1, 2, 3, 4, 5}, same)},
      {with({1, 2, 3, 4, 5}, same), with({1, 2, 3, 4, 6}, same)},
      {with({2, 3, 4, 5}, same), with({1, 2, 3, 4, 5}, same)},
      {with({4}, same), with({4}, [](Request& q) { q.dtype = DataType::kFloat64; })},
      {with({4}, same), with({4}, [](Request& q) { q.reduce_op = ReduceOp::kMax; })},
      {with({4}, same), with({4}, [](Request& q) { q.device.id = 1; })},
      {with({4}, same), with({4}, [](Request& q) { q.root = 1; })},
      {with({4}, same), with({4}, [](Request& q) { q.type = OpType::kBroadcast; })},
      {with({4}, same), with({4}, [](Request& q) { q.postscale = 0.5; })},
      {with({4}, [](Request& q) { q.prescale = 0.0; }),
       with({4}, [](Request& q) { q.prescale = -0.0; })},
      {with({4}, [](Request& q) { q.prescale = std::nan(""); }),
       with({4}, [](Request& q) { q.prescale = std::nan(""); })},
      {with({4}, same), with({4}, [](Request& q) { q.prescale = std::nan(""); })},
      {with({4}, [](Request& q) { q.group = "g", q.group_size = 2; }),
       with({4}, [](Request& q) { q.group = "g", q.group_size = 2; })},
      {with({4}, [](Request& q) { q.group = "g", q.group_size = 2; }),
       with({4}, [](Request& q) { q.group = "h", q.group_size = 2; })},
      {with({4}, same), with({4}, [](Request& q) { q.group = "g", q.group_size = 2; })},
      {with({2, 2},
            [](Request& q) {
              q.splits = {1, 1};
            }),
       with({2, 2},
            [](Request& q) {
              q.splits = {2, 0};
            })},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [cached, asked] = cases[i];
    for (const auto& [a, b] : {std::pair(cached, asked), std::pair(asked, cached)}) {
      ResponseCache cache(4);
      int evicted = -1, pos = -1;
      cache.Put(MakeResponse("t", 4), a, &evicted);
      const auto want =
          a.SameParams(b) ? ResponseCache::State::kHit : ResponseCache::State::kInvalid;
      EXPECT_EQ(cache.Lookup(b, &pos), want) << "case " << i;
    }
  }
}

// StoreChooser: small calls stay plain; the first large call (cold) is
// not timed; each way is timed once, then the faster is used, with the
// other tried after kExplore large calls, the interval doubling (up to
// kMaxExplore) with each try that confirms the choice and back to kExplore
// after one that does not; a tried way's new time counts whole; a call much
// slower than its way's figure has the other tried next.
TEST(StoreChooser, TimesBothWaysThenKeepsTheFasterAndTriesTheOther) {
  StoreChooser c;
  const int64_t big = StoreChooser::kMinBytes, small = big - 1;
  const uint64_t n = StoreChooser::kExplore;
  EXPECT_FALSE(c.Choose(small).stream);
  c.Record({true, false}, small, 1e9);
  EXPECT_EQ(c.ns_per_byte(true), 0.0);
  auto first = c.Choose(big);
  EXPECT_FALSE(first.stream);
  c.Record(first, big, 1e9);  // cold: not counted
  EXPECT_EQ(c.ns_per_byte(false), 0.0);
  c.Record(c.Choose(big), big, 3.0 * big);  // plain: 3 ns per byte
  EXPECT_EQ(c.ns_per_byte(false), 3.0);
  auto second = c.Choose(big);
  EXPECT_TRUE(second.stream);
  EXPECT_TRUE(second.explore);
  c.Record(second, big, 1.0 * big);    // streaming: 1 ns per byte
  EXPECT_EQ(c.explore_interval(), n);  // the first timing of a way confirms nothing
  static_assert(StoreChooser::kMaxExplore == 4 * StoreChooser::kExplore, "tries below");
  const std::set<uint64_t> tries = {n, 3 * n, 7 * n, 11 * n};  // intervals n, 2n, 4n, 4n
  for (uint64_t call = 1; call <= 11 * n; ++call) {
    const auto choice = c.Choose(big);
    EXPECT_EQ(choice.explore, tries.count(call) == 1) << call;
    EXPECT_EQ(choice.stream, !choice.explore) << call;
    EXPECT_FALSE(c.Choose(small).stream);  // small calls do not count
    c.Record(choice, big, (choice.stream ? 1.0 : 3.0) * big);
  }
  EXPECT_EQ(c.explore_interval(), StoreChooser::kMaxExplore);
  // Plain became faster (the cores share a cache again): one try says so.
  c.Record({false, true}, big, 0.5 * big);
  EXPECT_EQ(c.ns_per_byte(false), 0.5);
  EXPECT_EQ(c.explore_interval(), n);
  EXPECT_FALSE(c.Choose(big).stream);
  // The way in use drifts: 0.7 of the old figure, 0.3 of the new.
  c.Record({false, false}, big, 0.6 * big);
  EXPECT_DOUBLE_EQ(c.ns_per_byte(false), 0.7 * 0.5 + 0.3 * 0.6);
  const double plain = c.ns_per_byte(false);
  // A call 1.4x slower than plain's figure is noise; over kSurprise (1.5x),
  // the next call tries streaming, whose time counts whole.
  auto next = c.Choose(big);
  ASSERT_FALSE(next.stream);
  c.Record(next, big, 1.4 * plain * big);
  next = c.Choose(big);
  ASSERT_FALSE(next.stream);
  c.Record(next, big, 4.0 * big);
  EXPECT_EQ(c.explore_interval(), n);
  next = c.Choose(big);
  EXPECT_TRUE(next.stream);
  EXPECT_TRUE(next.explore);
  c.Record(next, big, 0.9 * big);
  EXPECT_EQ(c.ns_per_byte(true), 0.9);
  EXPECT_TRUE(c.Choose(big).stream);  // now the faster; no longer surprised
  EXPECT_FALSE(c.Choose(big).explore);
}

// ShmComm's path chooser: its own size line and intervals (2 at first, at
// most 8), calls below the line neither chosen nor timed.
TEST(StoreChooser, TakesItsOwnLineAndIntervals) {
  StoreChooser c(4096, 2, 8);
  EXPECT_EQ(c.min_bytes(), 4096);
  EXPECT_EQ(c.explore_interval(), 2u);
  c.Record(c.Choose(4096), 4096, 1e9);  // cold
  c.Record(c.Choose(4096), 4096, 2.0 * 4096);
  c.Record(c.Choose(4096), 4096, 1.0 * 4096);  // the other way, tried once
  EXPECT_EQ(c.ns_per_byte(true), 1.0);
  std::vector<uint64_t> tried;
  for (uint64_t call = 1; call <= 30; ++call) {
    EXPECT_FALSE(c.Choose(4095).stream);
    const auto choice = c.Choose(4096);
    if (choice.explore) tried.push_back(call);
    c.Record(choice, 4096, (choice.stream ? 1.0 : 2.0) * 4096);
  }
  EXPECT_EQ(tried, (std::vector<uint64_t>{2, 6, 14, 22, 30}));  // every 2, 4, 8, 8
  EXPECT_EQ(c.explore_interval(), 8u);
  // Two timings of each way, in turn, before the first choice; each way's
  // figure its faster one (a cold first call does not decide).
  StoreChooser two(4096, 2, 8, 2);
  two.Record(two.Choose(4096), 4096, 1e9);      // cold
  const double times[] = {5.0, 2.0, 1.5, 3.0};  // plain, backend, plain, backend
  for (int i = 0; i < 4; ++i) {
    const auto choice = two.Choose(4096);
    EXPECT_EQ(choice.stream, i % 2 == 1) << i;
    two.Record(choice, 4096, times[i] * 4096);
  }
  EXPECT_EQ(two.ns_per_byte(false), 1.5);
  EXPECT_EQ(two.ns_per_byte(true), 2.0);
  EXPECT_FALSE(two.Choose(4096).stream);
  // A way whose samples all went unrecorded (their calls took another
  // path) is tried again before any choice.
  StoreChooser lost(4096, 2, 8, 2);
  lost.Record(lost.Choose(4096), 4096, 1e9);  // cold
  for (int i = 0; i < 4; ++i) {
    const auto choice = lost.Choose(4096);
    if (!choice.stream) lost.Record(choice, 4096, 2.0 * 4096);
  }
  const auto again = lost.Choose(4096);
  EXPECT_TRUE(again.stream);
  EXPECT_TRUE(again.explore);
}

// A way retried after a surprise while it still lacked its samples is
// retried once, not in every call after.
TEST(StoreChooser, RetriesAWayStillBeingSampledOnce) {
  StoreChooser c(4096, 4, 8, 2);
  c.Record(c.Choose(4096), 4096, 1e9);  // cold
  const auto p1 = c.Choose(4096), s1 = c.Choose(4096), p2 = c.Choose(4096), s2 = c.Choose(4096);
  ASSERT_TRUE(!p1.stream && s1.stream && !p2.stream && s2.stream);
  c.Record(p1, 4096, 2.0 * 4096);
  c.Record(s1, 4096, 1.0 * 4096);
  c.Record(s2, 4096, 1.0 * 4096);  // p2's call went unrecorded: plain has one timing of two
  const auto next = c.Choose(4096);
  ASSERT_TRUE(next.stream && !next.explore);
  c.Record(next, 4096, 3.0 * 4096);  // a surprise: plain is tried next
  const auto retry = c.Choose(4096);
  ASSERT_TRUE(!retry.stream && retry.explore);
  c.Record(retry, 4096, 2.0 * 4096);  // plain's second sample
  const auto after = c.Choose(4096);
  EXPECT_TRUE(after.stream && !after.explore) << "plain retried again";
}

// ShmComm's stores and placement time the same calls (shm_shared.cc): the
// stores' way for a call is chosen at the first barrier of the call
// before, the placement at that call's end, after its record; a call counts
// for the stores only where the placement is not tried, and for the
// placement only where the stores are not. Where both tried in one call,
// each retrying after a surprise, neither was timed again and both kept
// retrying to the end; the placement now waits while the stores try. Calls
// of one launch: 10% noise, now and then 1-3 calls twice as slow.
TEST(StoreChooser, TwoTimingTheSameCallsNeverBothTry) {
  const int64_t big = 4096;
  StoreChooser stores(big, 4, 8, 2), placement(big, 4, 8, 2);
  StoreChooser::Choice s = stores.Choose(big), p = placement.Choose(big);
  uint32_t seed = 12345;
  auto uniform = [&] {
    seed = seed * 1664525u + 1013904223u;  // a fixed sequence: the test is deterministic
    return static_cast<double>(seed >> 8) / (1 << 24);
  };
  int both = 0, slow_left = 0, timed_late[2] = {0, 0};
  for (int call = 0; call < 2000; ++call) {
    const StoreChooser::Choice s_next = stores.Choose(big);
    if (slow_left == 0 && uniform() < 0.03) slow_left = 1 + static_cast<int>(3 * uniform());
    const double slow = slow_left > 0 ? 2.0 : 1.0;
    slow_left -= slow_left > 0;
    // Plain stores and the first part the faster ways.
    const double ns = (1.0 + 0.5 * s.stream + 0.3 * p.stream) * (1 + 0.1 * uniform()) * slow;
    both += s.explore && p.explore;
    if (!s.explore) {
      placement.Record(p, big, ns * big);
      timed_late[1] += call >= 1900;
    }
    const StoreChooser::Choice p_next = placement.Choose(big, !s_next.explore);
    if (!p.explore) {
      stores.Record(s, big, ns * big);
      timed_late[0] += call >= 1900;
    }
    s = s_next;
    p = p_next;
  }
  EXPECT_EQ(both, 0);
  EXPECT_GE(timed_late[0], 80) << "the stores no longer timed";
  EXPECT_GE(timed_late[1], 80) << "the placement no longer timed";
  EXPECT_LT(stores.ns_per_byte(false), stores.ns_per_byte(true));
  EXPECT_LT(placement.ns_per_byte(false), placement.ns_per_byte(true));
}

// AgreedStores: member 0 chooses, publishes before each call's first
// barrier and everyone reads after it, so both members take the same way in
// every call; a choice stands until a large call takes it, so the large
// calls' ways do not depend on the small calls between them.
TEST(AgreedStores, EveryMemberTakesMemberZerosWayInEveryCall) {
  const int64_t big = StoreChooser::kMinBytes, small = big - 1;
  auto run = [&](int smalls_between) {
    int32_t published[2] = {0, 0};  // member 0's line
    AgreedStores zero(StoreChooser(big, 4, 8, 2)), one(StoreChooser(big, 4, 8, 2));
    zero.Attach(published, true);
    one.Attach(published, false);
    std::vector<bool> ways;  // the large calls'
    for (int call = 0; call < 40; ++call) {
      for (int k = 0; k <= smalls_between; ++k) {
        const int64_t bytes = k == smalls_between ? big : small;
        const auto a = zero.For(bytes), b = one.For(bytes);
        EXPECT_EQ(a.stream, b.stream) << call;
        zero.Publish(bytes == big);
        one.Publish(bytes == big);
        zero.Read();
        one.Read();
        if (bytes < big) continue;
        ways.push_back(a.stream);
        const double ns = (a.stream ? 1.0 : 2.0) * static_cast<double>(big);  // streaming faster
        zero.Record(a, big, ns, true);
        one.Record(b, big, 10 * ns, true);  // member 1's times count nowhere
      }
    }
    EXPECT_EQ(zero.streamed(), one.streamed());
    EXPECT_EQ(one.chooser().ns_per_byte(false), 0.0);
    return ways;
  };
  const std::vector<bool> alone = run(0);
  // The untimed first call, plain and streaming in turn twice (chosen a
  // call ahead of each record, so counted as given), then streaming, plain
  // tried every 4 calls at first.
  ASSERT_GE(alone.size(), 12u);
  EXPECT_EQ(std::vector<bool>(alone.begin(), alone.begin() + 12),
            (std::vector<bool>{false, false, true, false, true, true, true, true, false, true, true,
                               true}));
  EXPECT_EQ(run(3), alone);
}

TEST(Fusion, AllgatherBytesCountEveryRank) {
  Response g = MakeResponse("g", 0, DataType::kFloat32, OpType::kAllgather);
  g.sizes = {3, 1, 2};  // rows of 3 elements; rank 0 has 1 row, rank 1 has 2
  EXPECT_EQ(ResponseBytes(g, 2), 3 * 3 * 4);
}

TEST(Config, DefaultsAliasesAndErrors) {
  unsetenv("HVD_FUSION_THRESHOLD");
  unsetenv("HOROVOD_FUSION_THRESHOLD");
  unsetenv("HVD_CYCLE_TIME");
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.fusion_threshold_bytes, 128LL * 1024 * 1024);
  EXPECT_EQ(c.cycle_time_ms, 1.0);
  EXPECT_EQ(c.cache_capacity, 1024);
  EXPECT_EQ(c.wait_spin_us, -1);  // the runtime's choice
  EXPECT_FALSE(c.fusion_threshold_fixed);
  setenv("HVD_WAIT_SPIN_US", "0", 1);
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.wait_spin_us, 0);
  for (const char* bad : {"-1", "2000000", "1ms"}) {
    setenv("HVD_WAIT_SPIN_US", bad, 1);
    const Status w = Config::FromEnvironment(&c);
    EXPECT_EQ(w.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(w.message().find("HVD_WAIT_SPIN_US"), std::string::npos) << w.message();
  }
  unsetenv("HVD_WAIT_SPIN_US");

  setenv("HOROVOD_FUSION_THRESHOLD", "1024", 1);
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.fusion_threshold_bytes, 1024);
  EXPECT_TRUE(c.fusion_threshold_fixed);
  setenv("HVD_FUSION_THRESHOLD", "2048", 1);  // HVD_ wins over HOROVOD_
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.fusion_threshold_bytes, 2048);

  setenv("HVD_CYCLE_TIME", "fast", 1);
  Status s = Config::FromEnvironment(&c);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("HVD_CYCLE_TIME='fast'"), std::string::npos) << s.message();
  unsetenv("HVD_CYCLE_TIME");
  setenv("HVD_CONTROLLER", "tcp", 1);
  EXPECT_FALSE(Config::FromEnvironment(&c).ok());
  unsetenv("HVD_CONTROLLER");
  setenv("HVD_LOG_LEVEL", "debug", 1);
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  unsetenv("HVD_LOG_LEVEL");
  unsetenv("HVD_FUSION_THRESHOLD");
  unsetenv("HOROVOD_FUSION_THRESHOLD");
}

// The allreduce chunk: unset, the multi-host default (the runtime swaps in
// the cache-sized one when every rank is on one host); set, even to 0, it
// is the user's and stays.
TEST(Config, AllreduceChunkDefaultsAndOverride) {
  unsetenv("HVD_ALLREDUCE_CHUNK_BYTES");
  unsetenv("HOROVOD_ALLREDUCE_CHUNK_BYTES");
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.allreduce_chunk_bytes, 4LL << 20);
  EXPECT_FALSE(c.allreduce_chunk_bytes_fixed);
  const int64_t local = HostLocalChunkBytes();
  EXPECT_GE(local, 256LL << 10);
  EXPECT_LE(local, 4LL << 20);
  // Shared memory's rounds: a quarter of that chunk (an eighth of L2).
  EXPECT_EQ(SharedRoundBytes(), std::clamp<int64_t>(local / 4, 64LL << 10, 1LL << 20));
  setenv("HVD_ALLREDUCE_CHUNK_BYTES", "0", 1);
  Config d;
  ASSERT_TRUE(Config::FromEnvironment(&d).ok());
  EXPECT_EQ(d.allreduce_chunk_bytes, 0);
  EXPECT_TRUE(d.allreduce_chunk_bytes_fixed);
  unsetenv("HVD_ALLREDUCE_CHUNK_BYTES");
}

// Settings read once by Config: a bad value is an error naming the variable
// and the value (the GPU timeout used to fall back to 600 silently).
TEST(Config, GpuAndElasticSettingsAreValidated) {
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.gpu_timeout_seconds, 600.0);
  EXPECT_EQ(c.gpu_operations, GpuOperations::kAuto);
  EXPECT_EQ(c.elastic_timeout_seconds, 600.0);
  setenv("HVD_GPU_TIMEOUT_SECONDS", "ten", 1);
  Status s = Config::FromEnvironment(&c);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("HVD_GPU_TIMEOUT_SECONDS='ten'"), std::string::npos) << s.message();
  setenv("HVD_GPU_TIMEOUT_SECONDS", "0", 1);  // 0: no limit
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.gpu_timeout_seconds, 0.0);
  unsetenv("HVD_GPU_TIMEOUT_SECONDS");
  setenv("HOROVOD_GPU_OPERATIONS", "MPI", 1);
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.gpu_operations, GpuOperations::kStaging);
  setenv("HOROVOD_GPU_OPERATIONS", "nvlink", 1);
  s = Config::FromEnvironment(&c);
  EXPECT_NE(s.message().find("HVD_GPU_OPERATIONS='nvlink'"), std::string::npos) << s.message();
  unsetenv("HOROVOD_GPU_OPERATIONS");
  setenv("HVD_ELASTIC_TIMEOUT", "0", 1);
  s = Config::FromEnvironment(&c);
  EXPECT_NE(s.message().find("HVD_ELASTIC_TIMEOUT='0'"), std::string::npos) << s.message();
  unsetenv("HVD_ELASTIC_TIMEOUT");
}

// The launcher's variables: one host rule, the first rank/size pair, the
// rendezvous store.
TEST(LaunchEnv, HostRankPairsAndStore) {
  for (const char* v :
       {"HVD_HOSTNAME", "PMIX_HOSTNAME", "SLURMD_NODENAME", "HVD_RANK", "HVD_SIZE", "HOROVOD_RANK",
        "HOROVOD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
        "SLURM_PROCID", "SLURM_NTASKS", "HVD_RENDEZVOUS_ADDR"}) {
    unsetenv(v);
  }
  setenv("SLURMD_NODENAME", "slurm-node", 1);
  EXPECT_EQ(HostKey(), "slurm-node");
  setenv("PMIX_HOSTNAME", "pmix-node", 1);
  EXPECT_EQ(HostKey(), "pmix-node");
  setenv("HVD_HOSTNAME", "hvd-node", 1);
  EXPECT_EQ(LaunchEnv::FromEnvironment().host, "hvd-node");

  LaunchEnv e = LaunchEnv::FromEnvironment();
  EXPECT_FALSE(e.has_rank);
  EXPECT_FALSE(e.rendezvous.set);
  setenv("PMI_RANK", "2", 1);
  setenv("PMI_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);  // an earlier pair, half set: an error
  e = LaunchEnv::FromEnvironment();
  EXPECT_NE(e.rank_error.message().find("OMPI_COMM_WORLD_RANK=1 / OMPI_COMM_WORLD_SIZE=(unset)"),
            std::string::npos)
      << e.rank_error.message();
  unsetenv("OMPI_COMM_WORLD_RANK");
  e = LaunchEnv::FromEnvironment();
  EXPECT_TRUE(e.rank_error.ok());
  EXPECT_TRUE(e.has_rank && e.rank == 2 && e.size == 4 && e.mpi_launched);
  setenv("HVD_RENDEZVOUS_ADDR", "10.0.0.1", 1);
  EXPECT_TRUE(LaunchEnv::FromEnvironment().rendezvous.set);
  for (const char* v : {"HVD_HOSTNAME", "PMIX_HOSTNAME", "SLURMD_NODENAME", "PMI_RANK", "PMI_SIZE",
                        "HVD_RENDEZVOUS_ADDR"}) {
    unsetenv(v);
  }
}

// Every DataType converts to DLPack and back; other DLPack types are refused.
TEST(DataTypes, DLPackRoundTripAndRefusals) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto dt = static_cast<DataType>(i);
    const DLDataType dl = ToDLDataType(dt);
    EXPECT_EQ(dl.bits, DataTypeSize(dt) * 8);
    DataType back = DataType::kUInt8;
    ASSERT_TRUE(FromDLDataType(dl, &back).ok()) << DataTypeName(dt);
    EXPECT_EQ(back, dt);
  }
  DataType out;
  for (DLDataType bad :
       {DLDataType{kDLFloat, 8, 1}, DLDataType{kDLUInt, 16, 1}, DLDataType{kDLBfloat, 32, 1},
        DLDataType{kDLInt, 12, 1}, DLDataType{kDLComplex, 64, 1}, DLDataType{kDLFloat, 32, 4}}) {
    EXPECT_EQ(FromDLDataType(bad, &out).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(DataTypeSize(DataType::kBFloat16), 2u);
  EXPECT_EQ(DataTypeSize(static_cast<DataType>(200)), 0u);  // outside the enum
  EXPECT_STREQ(DataTypeName(static_cast<DataType>(200)), "unknown");
}

TEST(Half, ConversionsRoundToNearestEven) {
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(1.0f)), 1.0f);
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(Float16ToFloat(FloatToFloat16(70000.0f))));
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(2049.0f)), 2048.0f);  // tie to even
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(2051.0f)), 2052.0f);
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(5.96046448e-8f)), 5.96046448e-8f);  // smallest subnormal
  EXPECT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(NAN))));
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(259.0f)), 260.0f);
}

TEST(Reduce, HalfSumIsComputedNotBitSummed) {
  uint16_t a[2] = {FloatToFloat16(1.5f), FloatToBFloat16(0) /*unused*/};
  uint16_t b[2] = {FloatToFloat16(2.25f), 0};
  ReduceInto(a, b, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(Float16ToFloat(a[0]), 3.75f);
  uint16_t c = FloatToBFloat16(-3.0f), d = FloatToBFloat16(2.0f);
  ReduceInto(&c, &d, 1, DataType::kBFloat16, ReduceOp::kMax);
  EXPECT_EQ(BFloat16ToFloat(c), 2.0f);
}

// Streaming stores need aligned destinations: every head offset, sizes
// around the 64-byte loop, and nothing written past the end.
TEST(Reduce, StreamCopyCopiesEveryByteAtEveryAlignment) {
  std::vector<uint8_t> src(4096 + 64 + 8), dst(4096 + 64 + 16);  // sources start at 0-7
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t off = 0; off < 16; ++off) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{63}, size_t{64}, size_t{79},
                     size_t{80}, size_t{143}, size_t{4096}, size_t{4096 + 63}}) {
      std::fill(dst.begin(), dst.end(), uint8_t{0xEE});
      StreamCopy(dst.data() + off, src.data() + (off * 3) % 8, n);
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool in = i >= off && i < off + n;
        ASSERT_EQ(dst[i], in ? src[i - off + (off * 3) % 8] : 0xEE)
            << "offset " << off << " n " << n << " byte " << i;
      }
    }
  }
  EXPECT_EQ(StreamingStoreBytes(),
            std::clamp<int64_t>(HostLocalChunkBytes() * 32, 8LL << 20, 64LL << 20))
      << "sixteen L2 caches (the chunk is half of one, when not clamped)";
}

TEST(Reduce, IntegersWrapAndScaleRoundsToNearest) {
  int32_t x = 2147483647, y = 1;
  ReduceInto(&x, &y, 1, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(x, -2147483647 - 1);
  int64_t v[3] = {6, 7, -7};
  ScaleBuffer(v, 3, DataType::kInt64, 1.0 / 3);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], -2);
  float f[2] = {1.0f, 3.0f};
  ScaleBuffer(f, 2, DataType::kFloat32, 0.5);
  EXPECT_EQ(f[1], 1.5f);
}

// An average over 3 (or 6, ...) ranks divides, as DDP and Horovod's own tests
// compute it; over a power of two it multiplies, which is the same result.
TEST(Reduce, AverageOverNonPowerOfTwoRanksIsTheCorrectlyRoundedQuotient) {
  double n = 0;
  EXPECT_TRUE(ScaleIsDivision(1.0 / 3, &n));
  EXPECT_EQ(n, 3.0);
  EXPECT_TRUE(ScaleIsDivision(1.0 / 6, &n));
  EXPECT_FALSE(ScaleIsDivision(1.0 / 4, &n));
  EXPECT_FALSE(ScaleIsDivision(0.3, &n));
  EXPECT_FALSE(ScaleIsDivision(2.0, &n));
  std::vector<float> f(1000);
  std::vector<double> d(f.size());
  int differs = 0;  // how many values the multiply by fl(1/3) would get wrong
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = 2.0f * (static_cast<float>(i) - 500.0f) + 0.1f * static_cast<float>(i % 7);
    d[i] = f[i];
  }
  std::vector<float> fo(f.size());
  std::vector<double> dout(d.size());
  ScaleCopy(fo.data(), f.data(), static_cast<int64_t>(f.size()), DataType::kFloat32, 1.0 / 3);
  ScaleCopy(dout.data(), d.data(), static_cast<int64_t>(d.size()), DataType::kFloat64, 1.0 / 3);
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(fo[i], f[i] / 3.0f) << i;
    EXPECT_EQ(dout[i], d[i] / 3.0) << i;
    differs += f[i] * static_cast<float>(1.0 / 3) != f[i] / 3.0f;
  }
  EXPECT_GT(differs, 0);  // the test would catch a multiply
  uint16_t h = FloatToFloat16(7.0f);
  ScaleBuffer(&h, 1, DataType::kFloat16, 1.0 / 3);
  EXPECT_EQ(h, FloatToFloat16(7.0f / 3.0f));
  float q[2] = {1.0f, 3.0f};
  ScaleBuffer(q, 2, DataType::kFloat32, 0.25);
  EXPECT_EQ(q[1], 0.75f);
}

TEST(Autotune, GaussianProcessInterpolatesAndIsUncertainAway) {
  Eigen::MatrixXd x(3, 1);
  x << 0.1, 0.5, 0.9;
  Eigen::VectorXd y(3);
  y << 1.0, 3.0, 2.0;
  GaussianProcess gp(0.25, 1e-6);
  gp.Fit(x, y);
  double m, sd;
  Eigen::VectorXd q(1);
  q << 0.5;
  gp.Predict(q, &m, &sd);
  EXPECT_NEAR(m, 3.0, 1e-3);
  EXPECT_LT(sd, 1e-2);
  q << 3.0;  // far from every sample: back to the prior
  gp.Predict(q, &m, &sd);
  EXPECT_NEAR(m, 2.0, 1e-3);
  EXPECT_GT(sd, 0.5);
}

TEST(Autotune, ExpectedImprovementPrefersHighMeanAndUncertainty) {
  EXPECT_GT(BayesianOptimizer::ExpectedImprovement(2.0, 0.1, 1.0, 0.0),
            BayesianOptimizer::ExpectedImprovement(1.0, 0.1, 1.0, 0.0));
  EXPECT_GT(BayesianOptimizer::ExpectedImprovement(1.0, 1.0, 1.0, 0.0),
            BayesianOptimizer::ExpectedImprovement(1.0, 0.1, 1.0, 0.0));
  EXPECT_EQ(BayesianOptimizer::ExpectedImprovement(5.0, 0.0, 1.0, 0.0), 0.0);
}

TEST(Autotune, OptimizerFindsTheMaximumOfASmoothFunction) {
  // Peak at (0.7, 0.3); 20 evaluations as autotune makes.
  auto f = [](const std::vector<double>& x) {
    return -((x[0] - 0.7) * (x[0] - 0.7) + (x[1] - 0.3) * (x[1] - 0.3));
  };
  BayesianOptimizer bo(2, 0.01, 1e-4, 42u);
  for (int i = 0; i < 20; ++i) {
    auto x = bo.Next();
    bo.AddSample(x, f(x));
  }
  auto best = bo.Best();
  EXPECT_GT(f(best), -0.01) << best[0] << ", " << best[1];
}

// The element-wise loops run in blocks of 16 plus a tail: lengths around a
// block boundary, in place and out of place, give the scalar results.
TEST(Reduce, BlockedLoopsMatchElementByElement) {
  for (int64_t n : {0, 1, 15, 16, 17, 37}) {
    std::vector<float> a(n), b(n), out(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 7) - 3;
      b[i] = static_cast<float>(i % 5) - 1;
    }
    const struct {
      ReduceOp op;
      float (*f)(float, float);
    } cases[] = {{ReduceOp::kSum, [](float x, float y) { return x + y; }},
                 {ReduceOp::kMin, [](float x, float y) { return std::min(x, y); }},
                 {ReduceOp::kMax, [](float x, float y) { return std::max(x, y); }},
                 {ReduceOp::kProduct, [](float x, float y) { return x * y; }}};
    for (const auto& c : cases) {
      std::vector<float> d = a;
      ReduceInto(d.data(), b.data(), n, DataType::kFloat32, c.op);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(d[i], c.f(a[i], b[i])) << n << " " << i;
    }
    ScaleCopy(out.data(), a.data(), n, DataType::kFloat32, 0.5);
    std::vector<float> in_place = a;
    ScaleCopy(in_place.data(), in_place.data(), n, DataType::kFloat32, 0.5);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i], a[i] * 0.5f);
      EXPECT_EQ(in_place[i], a[i] * 0.5f);
    }
  }
}

}  // namespace
}  // namespace hvd
