// The negotiation protocol in one process: several Negotiators (one per
// rank) and one Coordinator, with reports and decisions passed by hand, so
// every interleaving a real job could produce can be forced and checked:
// the cache path, late ranks, renegotiation after eviction, stale hits,
// mismatches, join, stalls and shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/coordination/coordinator.h"
#include "core/coordination/negotiator.h"
#include "core/coordination/slot_set.h"

namespace hvd {
namespace {

Request Allreduce(const std::string& name, int64_t n, OpType type = OpType::kAllreduce) {
  Request q;
  q.name = name;
  q.type = type;
  q.shape = {n};
  return q;
}

// N ranks: rank r's requests live in `owned[r]` (as the tensor queue keeps
// them alive until answered).
struct Job {
  explicit Job(int n, Config c = Config()) : config(c), coordinator(n, 0, config) {
    for (int r = 0; r < n; ++r) {
      negotiators.push_back(
          std::make_unique<Negotiator>(config.cache_capacity, config.cache_capacity_max()));
      last_runs.emplace_back();
      owned.emplace_back();
      epochs.push_back(0);
    }
  }

  // Rank r submits; its report reaches the coordinator at once.
  void Submit(int r, std::vector<Request> qs) {
    Report rep;
    ASSERT_TRUE(Stage(r, std::move(qs), &rep));
    Deliver(r, rep);
  }
  // Rank r submits; the report is returned to be delivered later.
  bool Stage(int r, std::vector<Request> qs, Report* rep) {
    std::vector<const Request*> ptrs;
    for (auto& q : qs) {
      owned[r].push_back(std::make_unique<Request>(q));
      ptrs.push_back(owned[r].back().get());
    }
    negotiators[r]->Add(ptrs);
    return negotiators[r]->TakeReport(rep);
  }
  void Deliver(int r, const Report& rep) { ASSERT_TRUE(coordinator.OnReport(r, rep).ok()); }

  // Decides and applies to every rank; returns per rank the names run, in
  // order (and sends the renegotiations the decision caused).
  std::vector<std::vector<std::string>> Step(std::vector<Applied>* applied = nullptr) {
    std::vector<std::vector<std::string>> ran(negotiators.size());
    Decision d;
    while (coordinator.Decide(&d)) {
      for (size_t r = 0; r < negotiators.size(); ++r) {
        Applied a;
        EXPECT_TRUE(negotiators[r]->Apply(d, &a).ok());
        // A repeat runs what the last decision with runs ran (as SetLoop's
        // FusionMemo does); only a decision of cached slots repeats.
        if (a.repeat) {
          EXPECT_TRUE(a.runs.empty());
          a.runs = last_runs[r];
          ++repeats;
        } else if (!a.runs.empty()) {
          last_runs[r] = a.runs;
        }
        for (const auto& resp : a.runs) ran[r].push_back(resp->names[0]);
        if (applied) applied->push_back(a);
        Report rep;
        if (negotiators[r]->TakeReport(&rep)) Deliver(static_cast<int>(r), rep);
      }
      d = Decision();
    }
    return ran;
  }

  Config config;
  Coordinator coordinator;
  std::vector<std::unique_ptr<Negotiator>> negotiators;
  std::vector<std::vector<ResponsePtr>> last_runs;  // per rank
  int repeats = 0;                                  // decisions applied as repeats
  std::vector<std::vector<std::unique_ptr<Request>>> owned;
  std::vector<int64_t> epochs;
};

using Names = std::vector<std::string>;

TEST(Negotiation, FirstStepFullThenCachedBySlot) {
  Job job(2);
  for (int r = 0; r < 2; ++r) job.Submit(r, {Allreduce("a", 4), Allreduce("b", 8)});
  auto ran = job.Step();
  EXPECT_EQ(ran[0], (Names{"a", "b"}));
  EXPECT_EQ(ran[1], (Names{"a", "b"}));
  // Step two: cache hits only; the report carries slots, not requests.
  Report rep;
  ASSERT_TRUE(job.Stage(1, {Allreduce("a", 4), Allreduce("b", 8)}, &rep));
  EXPECT_TRUE(rep.requests.empty());
  EXPECT_EQ(rep.hits.size(), 2u);
  job.Deliver(1, rep);
  EXPECT_TRUE(job.Step()[1].empty());  // rank 0 has not submitted yet
  EXPECT_TRUE(job.negotiators[1]->waiting());
  job.Submit(0, {Allreduce("b", 8), Allreduce("a", 4)});
  ran = job.Step();
  EXPECT_EQ(ran[0], (Names{"a", "b"}));  // slot order, the same on every rank
  EXPECT_EQ(ran[1], (Names{"a", "b"}));
  EXPECT_FALSE(job.negotiators[0]->waiting());
  EXPECT_FALSE(job.negotiators[1]->waiting());
}

// A step of the same cached slots as the step before is applied as a
// repeat (no per-tensor references); a new tensor, another set of slots or a
// changed cache ends the run of repeats.
TEST(Negotiation, RepeatedCachedStepsAreRepeats) {
  Job job(2);
  auto step = [&job](std::vector<Request> qs) {
    for (int r = 0; r < 2; ++r) job.Submit(r, qs);
    const int before = job.repeats;
    auto ran = job.Step();
    EXPECT_EQ(ran[0], ran[1]);
    return std::make_pair(ran[0], job.repeats - before);
  };
  const std::vector<Request> ab = {Allreduce("a", 4), Allreduce("b", 8)};
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 0));  // in full
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 0));  // cached, first time
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 2));  // the same slots: both ranks
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 2));
  EXPECT_EQ(step({Allreduce("a", 4)}), std::make_pair(Names{"a"}, 0));
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 0));
  EXPECT_EQ(step(ab), std::make_pair(Names{"a", "b"}, 2));
  // b's shape changes: its slot is refilled, and the step after it is not a
  // repeat of the one before, though it names the same slots.
  const std::vector<Request> ab2 = {Allreduce("a", 4), Allreduce("b", 9)};
  EXPECT_EQ(step(ab2).second, 0);
  EXPECT_EQ(step(ab2), std::make_pair(Names{"a", "b"}, 0));
  EXPECT_EQ(step(ab2), std::make_pair(Names{"a", "b"}, 2));
  EXPECT_FALSE(job.negotiators[0]->waiting());
  EXPECT_FALSE(job.negotiators[1]->waiting());
}

TEST(Negotiation, ShapeChangeOfACachedTensorIsAMismatch) {
  Job job(2);
  for (int r = 0; r < 2; ++r) job.Submit(r, {Allreduce("a", 4)});
  job.Step();
  job.Submit(0, {Allreduce("a", 4)});  // a hit
  job.Submit(1, {Allreduce("a", 5)});  // invalidates the slot
  std::vector<Applied> applied;
  auto ran = job.Step(&applied);
  ASSERT_EQ(ran[0], Names{"a"});
  bool saw_error = false;
  for (const auto& a : applied) {
    for (const auto& r : a.runs) {
      if (r->error_code == Code::kMismatch) {
        saw_error = true;
        EXPECT_NE(r->error.find("Mismatched allreduce tensor shapes for tensor 'a'"),
                  std::string::npos)
            << r->error;
        EXPECT_NE(r->error.find("rank 0: [4]; rank 1: [5]"), std::string::npos) << r->error;
      }
    }
  }
  EXPECT_TRUE(saw_error);
  EXPECT_FALSE(job.negotiators[0]->waiting());
  EXPECT_FALSE(job.negotiators[1]->waiting());
}

// Capacity 1: caching "b" evicts "a". A rank that reported a hit on a's
// slot before it learnt of the eviction renegotiates a in full, and nothing
// runs twice or under the wrong name.
// A cache of 2 slots (not fixed by HVD_CACHE_CAPACITY) and 5 tensors a step:
// the coordinator's cache grows, every rank's mirror follows, and from the
// third step the reports carry only slots (the second's hits mark their
// slots in use before its new tensors ask for one).
TEST(Negotiation, TheCacheGrowsOnEveryRankWhenTensorsOutnumberItsSlots) {
  Config c;
  c.cache_capacity = 2;
  Job job(2, c);
  const Names names = {"a", "b", "c", "d", "e"};
  auto step = [&](int s) {
    for (int r = 0; r < 2; ++r) {
      std::vector<Request> qs;
      for (const auto& n : names) qs.push_back(Allreduce(n, 4));
      Report rep;
      job.Stage(r, qs, &rep);
      if (s >= 2) {
        EXPECT_TRUE(rep.requests.empty()) << "step " << s << " rank " << r;
        EXPECT_EQ(rep.hits.size(), names.size()) << "step " << s << " rank " << r;
      }
      job.Deliver(r, rep);
    }
    auto ran = job.Step();
    for (int r = 0; r < 2; ++r) {
      Names sorted = ran[r];
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, names) << "step " << s << " rank " << r;
    }
    EXPECT_EQ(ran[0], ran[1]) << "step " << s;
  };
  for (int s = 0; s < 6; ++s) step(s);
}

TEST(Negotiation, StaleHitAfterEvictionIsRenegotiated) {
  Config c;
  c.cache_capacity = 1;
  Job job(2, c);
  for (int r = 0; r < 2; ++r) job.Submit(r, {Allreduce("a", 4)});
  job.Step();
  Report stale;
  ASSERT_TRUE(job.Stage(1, {Allreduce("a", 4)}, &stale));  // a hit at epoch 1
  ASSERT_EQ(stale.hits.size(), 1u);
  // Meanwhile "b" is negotiated and takes the only slot.
  job.Submit(0, {Allreduce("b", 2)});
  Report b1;
  {
    // Rank 1 submits b too; its report travels before the stale one lands.
    ASSERT_TRUE(job.Stage(1, {Allreduce("b", 2)}, &b1));
    job.Deliver(1, b1);
  }
  auto ran = job.Step();
  EXPECT_EQ(ran[1], Names{"b"});
  job.Deliver(1, stale);  // arrives late: must be ignored, not run as "b"
  ran = job.Step();
  EXPECT_TRUE(ran[0].empty());
  EXPECT_TRUE(ran[1].empty());
  EXPECT_TRUE(job.negotiators[1]->waiting());  // a is still pending on rank 1
  job.Submit(0, {Allreduce("a", 4)});
  ran = job.Step();
  EXPECT_EQ(ran[0], Names{"a"});
  EXPECT_EQ(ran[1], Names{"a"});
  EXPECT_FALSE(job.negotiators[1]->waiting());
}

TEST(Negotiation, JoinedRanksContributeToCachedAllreduces) {
  Job job(3);
  for (int r = 0; r < 3; ++r) job.Submit(r, {Allreduce("a", 4)});
  job.Step();
  Request join;
  join.type = OpType::kJoin;
  join.name = "join.0";
  job.Submit(2, {join});
  job.Submit(0, {Allreduce("a", 4)});
  job.Submit(1, {Allreduce("a", 4)});
  std::vector<Applied> applied;
  auto ran = job.Step(&applied);
  EXPECT_EQ(ran[2], Names{"a"});  // rank 2 takes part (with zeros)
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied[0].runs[0]->joined_ranks, std::vector<int32_t>{2});
  // A broadcast cannot run while a rank has joined.
  Request bc = Allreduce("c", 3, OpType::kBroadcast);
  job.Submit(0, {bc});
  job.Submit(1, {bc});
  applied.clear();
  job.Step(&applied);
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied[0].runs[0]->error_code, Code::kInvalidArgument);
  for (int r = 0; r < 2; ++r) job.Submit(r, {join});
  ran = job.Step();
  EXPECT_EQ(ran[0], Names{"join.0"});
  EXPECT_EQ(ran[2], Names{"join.0"});
}

TEST(Negotiation, WhileARankIsJoinedOtherOpsFailAtTheFirstRequest) {
  // Ranks 0 and 2 skip an unnamed allgather that rank 1 ran, so their next
  // ones carry different names; neither may wait for the other.
  Job job(3);
  Request join;
  join.type = OpType::kJoin;
  join.name = "join.0";
  job.Submit(1, {join});
  job.Submit(0, {Allreduce("allgather.noname.0", 3, OpType::kAllgather)});
  std::vector<Applied> applied;
  auto ran = job.Step(&applied);
  EXPECT_EQ(ran[0], Names{"allgather.noname.0"});
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied[0].runs[0]->error_code, Code::kInvalidArgument);
  EXPECT_NE(applied[0].runs[0]->error.find("ranks 1 have joined"), std::string::npos);
  job.Submit(2, {Allreduce("allgather.noname.1", 3, OpType::kAllgather)});
  applied.clear();
  ran = job.Step(&applied);
  EXPECT_EQ(ran[2], Names{"allgather.noname.1"});
  EXPECT_EQ(applied[2].runs[0]->error_code, Code::kInvalidArgument);
  // Allreduce still waits for every rank that has not joined.
  job.Submit(0, {Allreduce("a", 4)});
  EXPECT_TRUE(job.Step()[0].empty());
  job.Submit(2, {Allreduce("a", 4)});
  ran = job.Step();
  EXPECT_EQ(ran[0], Names{"a"});
  EXPECT_EQ(ran[1], Names{"a"});
  for (int r : {0, 2}) job.Submit(r, {join});
  ran = job.Step();
  EXPECT_EQ(ran[1], Names{"join.0"});
}

TEST(Negotiation, StalledTensorsFailAfterTheDeadlineNamingTheMissingRanks) {
  Config c;
  c.stall_check_seconds = 0.05;
  c.stall_shutdown_seconds = 0.2;
  Job job(3, c);
  for (int r = 0; r < 3; ++r) job.Submit(r, {Allreduce("a", 4)});
  job.Step();
  job.Submit(0, {Allreduce("a", 4), Allreduce("fresh", 2)});  // a cached, fresh not
  job.Submit(2, {Allreduce("a", 4), Allreduce("fresh", 2)});
  // Rank 0's view (every third Applied: decisions go to ranks 0, 1, 2).
  std::vector<ResponsePtr> failed;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (failed.size() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<Applied> applied;
    job.Step(&applied);
    for (size_t i = 0; i < applied.size(); i += 3) {
      failed.insert(failed.end(), applied[i].runs.begin(), applied[i].runs.end());
    }
  }
  ASSERT_EQ(failed.size(), 2u);
  for (const auto& r : failed) {
    EXPECT_EQ(r->error_code, Code::kTimeout);
    EXPECT_NE(r->error.find("waiting 0 s for ranks 1)"), std::string::npos) << r->error;
    EXPECT_NE(r->error.find("HVD_STALL_SHUTDOWN_TIME_SECONDS"), std::string::npos) << r->error;
  }
  EXPECT_FALSE(job.negotiators[0]->waiting());
  EXPECT_FALSE(job.negotiators[2]->waiting());
}

TEST(Negotiation, OperationDeadlineNamesWhoDidNotSubmit) {
  Config c;
  c.op_timeout_seconds = 0.1;
  Job job(2, c);
  job.Submit(1, {Allreduce("x", 4)});
  std::vector<Applied> applied;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (applied.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    job.Step(&applied);
  }
  ASSERT_FALSE(applied.empty());
  const auto& r = applied[0].runs.at(0);
  EXPECT_EQ(r->error_code, Code::kTimeout);
  EXPECT_NE(r->error.find("allreduce of tensor 'x' timed out after"), std::string::npos)
      << r->error;
  EXPECT_NE(r->error.find("rank 0 has not submitted it"), std::string::npos) << r->error;
}

TEST(Negotiation, ShutdownEndsTheDecisionStreamForEveryone) {
  Job job(2);
  job.negotiators[1]->RequestShutdown();
  Report rep;
  ASSERT_TRUE(job.negotiators[1]->TakeReport(&rep));
  job.Deliver(1, rep);
  std::vector<Applied> applied;
  job.Step(&applied);
  ASSERT_EQ(applied.size(), 2u);
  for (const auto& a : applied) {
    EXPECT_TRUE(a.shutdown);
    EXPECT_EQ(a.shutdown_ranks, std::vector<int32_t>{1});
  }
  EXPECT_TRUE(job.coordinator.stopped());
}

TEST(Negotiation, ALostMemberIsAnnouncedToTheOthers) {
  Job job(3);
  job.coordinator.OnPeerLost(2, "control connection to rank 2 (host h) lost: reset");
  std::vector<Applied> applied;
  job.Step(&applied);
  ASSERT_EQ(applied.size(), 3u);
  EXPECT_EQ(applied[0].lost.code(), Code::kPeerLost);
  EXPECT_NE(applied[0].lost.message().find("rank 2 (host h)"), std::string::npos);
}

}  // namespace
}  // namespace hvd

// The coordinator's set of waiting cache slots: slots come back in ascending
// order across word boundaries, each once, and the visitor may erase the
// slot it is given.
TEST(SlotSet, VisitsInOrderAndAllowsErasingTheCurrentSlot) {
  using hvd::SlotSet;
  SlotSet s(200);
  EXPECT_TRUE(s.empty());
  for (int32_t slot : {130, 0, 64, 63, 199, 64}) s.Insert(slot);
  EXPECT_EQ(s.size(), 5);
  std::vector<int32_t> seen;
  s.ForEach([&](int32_t slot) {
    seen.push_back(slot);
    if (slot % 2 == 1) s.Erase(slot);
  });
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 63, 64, 130, 199}));
  EXPECT_EQ(s.size(), 3);
  seen.clear();
  s.ForEach([&](int32_t slot) { seen.push_back(slot); });
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 64, 130}));
  s.Erase(7);  // absent: no effect
  EXPECT_EQ(s.size(), 3);
}
