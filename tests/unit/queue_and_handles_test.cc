// Unit tests of the handle table and the tensor queue: the per-tensor
// bookkeeping every async op goes through.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/common/block_pool.h"
#include "core/common/host_buffer.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/loop_progress.h"
#include "core/runtime/pending_entries.h"
#include "core/runtime/tensor_queue.h"
#include "core/tensor/wait_totals.h"

namespace hvd {
namespace {

// Leaves hvd_wait's spin as the other tests expect it (none).
struct NoSpinAfter {
  ~NoSpinAfter() { HandleState::SetWaitSpin(std::chrono::nanoseconds(0)); }
};

std::shared_ptr<HandleState> NewState() {
  return std::make_shared<HandleState>(1, nullptr);
}

TEST(HandleTable, IdsAreNeverReusedAndStaleOnesAreNamed) {
  HandleTable t;
  const int64_t a = t.Add(NewState());
  const int64_t b = t.Add(NewState());
  EXPECT_GT(b, a);
  EXPECT_TRUE(t.Release(a).ok());
  Status err;
  EXPECT_EQ(t.Find(a, &err), nullptr);
  EXPECT_NE(err.message().find("already released"), std::string::npos) << err.message();
  Status again = t.Release(a);
  EXPECT_EQ(again.code(), Code::kInvalidArgument);
  // The C layer names the function (hvd_release: ...); see tests/mp.
  EXPECT_EQ(again.message().find("unknown handle"), 0u) << again.message();
  EXPECT_EQ(t.Find(12345, &err), nullptr);
  EXPECT_EQ(err.message().find("already released"), std::string::npos);  // never issued
  EXPECT_EQ(t.Find(0, &err), nullptr);
  EXPECT_EQ(t.Find(-7, &err), nullptr);
  const int64_t c = t.Add(NewState());
  EXPECT_GT(c, b);
  EXPECT_EQ(t.size(), 2u);
}

// Many live handles (growth), released out of order (tombstones), with
// every survivor still found and mapped to its own state.
TEST(HandleTable, GrowsAndFindsEverySurvivor) {
  HandleTable t;
  std::vector<std::pair<int64_t, HandleState*>> live;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3000; ++i) {
      auto s = NewState();
      HandleState* raw = s.get();
      live.push_back({t.Add(std::move(s)), raw});
    }
    std::vector<std::pair<int64_t, HandleState*>> keep;
    for (size_t i = 0; i < live.size(); ++i) {
      if ((i * 7 + round) % 3 == 0) {
        ASSERT_TRUE(t.Release(live[i].first).ok());
      } else {
        keep.push_back(live[i]);
      }
    }
    live.swap(keep);
    ASSERT_EQ(t.size(), live.size());
    for (const auto& [id, raw] : live) {
      Status err;
      auto s = t.Find(id, &err);
      ASSERT_EQ(s.get(), raw) << "handle " << id;
    }
  }
}

// The training-loop pattern: a batch of handles, then all released in
// order, many times over. Released slots must come back clean (no growth,
// every live handle found).
TEST(HandleTable, InOrderBatchesStayFindable) {
  HandleTable t;
  for (int step = 0; step < 200; ++step) {
    std::vector<int64_t> ids;
    for (int i = 0; i < 700; ++i) ids.push_back(t.Add(NewState()));
    for (size_t i = 0; i < ids.size(); ++i) {
      Status err;
      ASSERT_NE(t.Find(ids[i], &err), nullptr) << "step " << step << " handle " << ids[i];
      ASSERT_TRUE(t.Release(ids[i]).ok());
      if (i + 1 < ids.size()) {
        ASSERT_NE(t.Find(ids.back(), &err), nullptr);
      }
    }
    ASSERT_EQ(t.size(), 0u);
  }
}

std::unique_ptr<TensorEntry> Entry(const std::string& name, int32_t set = 0) {
  auto e = std::make_unique<TensorEntry>();
  e->request.name = name;
  e->request.process_set = set;
  e->handle = NewState();
  return e;
}

TEST(TensorQueue, DuplicateNameUndoesTheWholeCall) {
  TensorQueue q;
  auto one = Entry("a");
  ASSERT_TRUE(q.Add(&one, 1).ok());
  std::vector<std::unique_ptr<TensorEntry>> group;
  group.push_back(Entry("b"));
  group.push_back(Entry("c"));
  group.push_back(Entry("a"));  // already pending
  const std::vector<TensorEntry*> before{group[0].get(), group[1].get(), group[2].get()};
  Status s = q.Add(group.data(), group.size());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'a' is already pending in process set 0"), std::string::npos);
  EXPECT_EQ(q.PendingCount(), 1u);  // b and c were taken back out
  // The caller has its own entries back, contents intact.
  for (size_t i = 0; i < group.size(); ++i) {
    EXPECT_EQ(group[i].get(), before[i]);
    EXPECT_EQ(group[i]->request.name, std::string(1, "bca"[i]));
    EXPECT_NE(group[i]->handle, nullptr);
  }
  std::vector<std::unique_ptr<TensorEntry>> twice;
  twice.push_back(Entry("d"));
  twice.push_back(Entry("d"));
  EXPECT_EQ(q.Add(twice.data(), twice.size()).code(), Code::kInvalidArgument);
  EXPECT_EQ(q.PendingCount(), 1u);
  std::vector<const Request*> requests;
  q.PopRequests(&requests);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]->name, "a");
}

// The loop sleeps in poll() on event_fd(): a submission while it sleeps
// makes the descriptor readable, one while it is awake does not (a burst
// costs one wake-up), and a submission that slips in before the loop sleeps
// keeps it from sleeping at all.
TEST(TensorQueue, EventDescriptorWakesASleepingLoopOnce) {
  TensorQueue q;
  auto readable = [&] {
    pollfd p{q.event_fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  };
  EXPECT_FALSE(q.Sleeping(true));  // nothing waiting: sleep
  EXPECT_FALSE(readable());
  auto a = Entry("a");
  ASSERT_TRUE(q.Add(&a, 1).ok());
  EXPECT_TRUE(readable());
  q.Sleeping(false);  // awake again: drains it
  EXPECT_FALSE(readable());
  auto b = Entry("b");
  ASSERT_TRUE(q.Add(&b, 1).ok());
  EXPECT_FALSE(readable());       // the loop was awake: no write
  EXPECT_TRUE(q.Sleeping(true));  // but it must not sleep with requests waiting
  std::vector<const Request*> popped;
  q.PopRequests(&popped);
  EXPECT_FALSE(q.Sleeping(true));
  q.Wake();
  EXPECT_TRUE(readable());
  q.Sleeping(false);
  EXPECT_FALSE(readable());
}

TEST(TensorQueue, TakeUnlinksFoundEntriesAndSkipsMissingOnes) {
  TensorQueue q;
  for (const char* n : {"x", "y"}) {
    auto e = Entry(n);
    ASSERT_TRUE(q.Add(&e, 1).ok());
  }
  const std::vector<std::string> names{"y", "missing", "x"};
  std::vector<TensorEntry*> found(names.size(), nullptr);
  EXPECT_EQ(q.Take(names, found.data()), 2u);
  ASSERT_NE(found[0], nullptr);
  EXPECT_EQ(found[0]->request.name, "y");
  EXPECT_EQ(found[1], nullptr);
  ASSERT_NE(found[2], nullptr);
  EXPECT_EQ(found[2]->request.name, "x");
  EXPECT_EQ(q.PendingCount(), 0u);
  q.Recycle(found);
  auto again = Entry("x");  // the name is free again
  EXPECT_TRUE(q.Add(&again, 1).ok());
}

// The index against std::map under random inserts and removals of names
// that share hash runs (a small table of many names forces long probes and
// backward shifts across the wrap-around).
TEST(PendingEntries, MatchesAMapUnderRandomInsertsAndRemovals) {
  PendingEntries p;
  std::map<std::string, TensorEntry*> ref;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const std::string name = "t" + std::to_string(rng() % 300);
    if (rng() % 2) {
      auto e = std::make_unique<TensorEntry>();
      e->request.name = name;
      e->bytes = step;
      TensorEntry* const mine = e.get();
      TensorEntry* got = p.Insert(&e);
      if (ref.count(name)) {
        ASSERT_EQ(got, nullptr) << name;
        EXPECT_EQ(e.get(), mine);  // untouched
        EXPECT_EQ(e->request.name, name);
      } else {
        ASSERT_EQ(got, mine);  // the pool took the caller's entry itself
        EXPECT_EQ(got->request.name, name);
        EXPECT_EQ(got->bytes, step);
        ASSERT_TRUE(e != nullptr);
        EXPECT_NE(e.get(), mine);
        EXPECT_TRUE(e->request.name.empty());  // a cleared entry in exchange
        ref[name] = got;
      }
    } else {
      TensorEntry* got = p.Remove(name);
      auto it = ref.find(name);
      ASSERT_EQ(got, it == ref.end() ? nullptr : it->second) << name;
      if (got) {
        ref.erase(it);
        got->Clear();
        p.Recycle(got);
      }
    }
    ASSERT_EQ(p.size(), ref.size());
    if (step % 997 == 0) {
      for (const auto& kv : ref) ASSERT_EQ(p.Find(kv.first), kv.second) << kv.first;
    }
  }
  std::vector<TensorEntry*> all;
  p.RemoveAll(&all);
  EXPECT_EQ(all.size(), ref.size());
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.Find("t1"), nullptr);
}

// Recycled entries keep their buffers: a steady stream reuses them.
TEST(TensorQueue, RecycledEntriesAreReusedWithTheirBuffers) {
  TensorQueue q;
  const std::string long_name(100, 'n');
  auto e = Entry(long_name);
  e->request.shape = {2, 3, 4, 5};
  ASSERT_TRUE(q.Add(&e, 1).ok());
  std::vector<TensorEntry*> found(1, nullptr);
  ASSERT_EQ(q.Take({long_name}, found.data()), 1u);
  TensorEntry* first = found[0];
  EXPECT_EQ(first->request.shape, (std::vector<int64_t>{2, 3, 4, 5}));
  q.Recycle(found);
  EXPECT_TRUE(first->request.name.empty());
  EXPECT_EQ(first->handle, nullptr);
  EXPECT_GE(first->request.name.capacity(), 100u);
  auto next = Entry("other");
  TensorEntry* const other = next.get();
  ASSERT_TRUE(q.Add(&next, 1).ok());
  EXPECT_EQ(next.get(), first);  // the caller got the recycled entry, buffers and all
  EXPECT_GE(next->request.name.capacity(), 100u);
  ASSERT_EQ(q.Take({"other"}, found.data()), 1u);
  EXPECT_EQ(found[0], other);  // the submitted entry itself, not a copy
  EXPECT_EQ(found[0]->request.name, "other");
  q.Recycle(found);
}

// Swap and Reset cover every field of an entry.
TEST(TensorEntry, SwapAndClearCoverEveryField) {
  TensorEntry a;
  Request& q = a.request;
  q.rank = 3;
  q.process_set = 2;
  q.type = OpType::kAlltoall;
  q.dtype = DataType::kFloat64;
  q.reduce_op = ReduceOp::kMax;
  q.device = Device{DeviceKind::kCUDA, 1};
  q.root = 1;
  q.prescale = 2;
  q.postscale = 3;
  q.shape = {4, 5};
  q.name = "a";
  q.splits = {1, 2};
  q.group = "g";
  q.group_size = 2;
  q.set_ranks = {0, 1};
  int x = 0;
  a.input = &x;
  a.output = &x;
  a.num_elements = 20;
  a.bytes = 160;
  a.handle = NewState();
  a.result_index = 3;
  a.allocator = [](size_t, const std::vector<int64_t>&, DataType, const Device&) {
    return nullptr;
  };
  a.cuda_stream = &x;
  a.enqueued = std::chrono::steady_clock::now();
  a.flight_token = 7;
  const TensorEntry copy = a;
  TensorEntry b;
  b.Swap(a);
  EXPECT_TRUE(b.request.SameParams(copy.request));
  EXPECT_EQ(b.request.rank, 3);
  EXPECT_EQ(b.request.process_set, 2);
  EXPECT_EQ(b.request.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(b.request.name, "a");
  EXPECT_EQ(b.request.set_ranks, copy.request.set_ranks);
  EXPECT_EQ(b.input, &x);
  EXPECT_EQ(b.output, &x);
  EXPECT_EQ(b.num_elements, 20);
  EXPECT_EQ(b.bytes, 160);
  EXPECT_EQ(b.handle, copy.handle);
  EXPECT_EQ(b.result_index, 3);
  EXPECT_TRUE(static_cast<bool>(b.allocator));
  EXPECT_EQ(b.cuda_stream, &x);
  EXPECT_EQ(b.enqueued, copy.enqueued);
  EXPECT_EQ(b.flight_token, 7u);
  const TensorEntry fresh;
  EXPECT_TRUE(a.request.SameParams(fresh.request));
  EXPECT_TRUE(a.request.name.empty());
  EXPECT_EQ(a.handle, nullptr);
  b.Clear();
  EXPECT_TRUE(b.request.SameParams(fresh.request));
  EXPECT_EQ(b.request.rank, fresh.request.rank);
  EXPECT_EQ(b.request.process_set, fresh.request.process_set);
  EXPECT_EQ(b.request.reduce_op, fresh.request.reduce_op);
  EXPECT_TRUE(b.request.name.empty());
  EXPECT_TRUE(b.request.set_ranks.empty());
  EXPECT_GE(b.request.shape.capacity(), 2u);  // memory kept
  EXPECT_EQ(b.input, nullptr);
  EXPECT_EQ(b.output, nullptr);
  EXPECT_EQ(b.num_elements, 0);
  EXPECT_EQ(b.bytes, 0);
  EXPECT_EQ(b.handle, nullptr);
  EXPECT_EQ(b.result_index, 0);
  EXPECT_FALSE(static_cast<bool>(b.allocator));
  EXPECT_EQ(b.cuda_stream, nullptr);
  EXPECT_EQ(b.enqueued, fresh.enqueued);
  EXPECT_EQ(b.flight_token, 0u);
}

// Pooled shared states are freed into the pool and handed out again, from
// any thread.
TEST(BlockPool, ReusesBlocksAcrossThreads) {
  auto a = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(), 1, nullptr);
  const void* where = a.get();
  std::thread([&] { a.reset(); }).join();
  auto b = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(), 2, nullptr);
  EXPECT_EQ(static_cast<const void*>(b.get()), where);
  b->Complete(Status::OK());
  EXPECT_FALSE(b->done());
  b->Complete(Status::OK());
  EXPECT_TRUE(b->done());
}

// Large results come back mapped and are reused by the next result of a
// fitting size (the pages stay faulted in); small ones use the heap; the
// cache stays within its bounds; moves hand the memory over.
TEST(HostBuffer, ReusesLargeMappingsWithinBounds) {
  const size_t mib = size_t{1} << 20;
  HostBuffer small(1000);
  ASSERT_NE(small.data(), nullptr);
  EXPECT_EQ(small.capacity(), 0u);
  const size_t before = HostBuffer::CachedBytesNow();
  const uint8_t* where = nullptr;
  {
    HostBuffer big(3 * mib);
    ASSERT_NE(big.data(), nullptr);
    EXPECT_EQ(big.capacity(), 4 * mib);  // whole huge pages
    std::fill(big.data(), big.data() + big.size(), uint8_t{7});
    where = big.data();
    HostBuffer moved(std::move(big));
    EXPECT_EQ(big.data(), nullptr);
    EXPECT_EQ(moved.data(), where);
  }
  EXPECT_EQ(HostBuffer::CachedBytesNow(), before + 4 * mib);
  {
    HostBuffer tiny_for_it(mib + 1);  // 4 MiB would waste more than as much again
    EXPECT_NE(tiny_for_it.data(), where);
    HostBuffer again(2 * mib + 5);
    EXPECT_EQ(again.data(), where);
    EXPECT_EQ(again.size(), 2 * mib + 5);
    EXPECT_EQ(again.data()[0], 7);  // the same pages, not zeroed
  }
  {
    std::vector<HostBuffer> many;
    for (size_t i = 0; i < HostBuffer::kCachedBuffers + 4; ++i) many.emplace_back(2 * mib);
  }
  EXPECT_LE(HostBuffer::CachedBytesNow(), HostBuffer::kCachedBuffers * 4 * mib);
  { HostBuffer huge(HostBuffer::kCachedBytes + mib); }
  EXPECT_LE(HostBuffer::CachedBytesNow(), HostBuffer::kCachedBytes);
}

}  // namespace
}  // namespace hvd

namespace hvd {
namespace {

// A grouped state: done after its last tensor, with the first error, and
// completions past the last (the watchdog failed it, then the loop
// finished it) change nothing.
TEST(HandleState, GroupFinishesOnceWithTheFirstError) {
  int calls = 0;
  Status seen;
  HandleState h(3, [&](int64_t, const Status& s) {
    ++calls;
    seen = s;
  });
  h.Complete(Status::OK());
  EXPECT_FALSE(h.done());
  EXPECT_EQ(h.Poll().code(), Code::kInProgress);
  h.Complete(Status::Timeout("first"));
  h.Complete(Status::Backend("second"));
  ASSERT_TRUE(h.done());
  EXPECT_EQ(h.Poll().code(), Code::kTimeout);
  EXPECT_EQ(h.Poll().message(), "first");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.message(), "first");
  h.Complete(Status::OK());
  h.Complete(Status::Internal("late"));
  EXPECT_EQ(h.Poll().message(), "first");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(h.Wait(0).code(), Code::kTimeout);  // the operation's own status
}

// A wait that blocks counts its time in Waits(), split where the collective
// started: before it (every rank had not submitted it) "negotiating", the
// rest waiting for data. A state never started counts all as negotiating;
// polls, finished states and point-to-point waits count nothing.
TEST(HandleState, WaitsCountTheirTimeSplitWhereTheCollectiveStarted) {
  const NoSpinAfter restore;
  HandleState::SetWaitSpin(std::chrono::nanoseconds(0));
  auto delta = [](const std::function<void()>& f) {
    const uint64_t w = Waits().waits, ns = Waits().ns, neg = Waits().negotiating_ns;
    f();
    return std::vector<uint64_t>{Waits().waits - w, Waits().ns - ns, Waits().negotiating_ns - neg};
  };
  const auto d = delta([] {
    CountWait(100, 500, 0);    // never started: 400 negotiating
    CountWait(100, 500, 300);  // started midway: 200
    CountWait(100, 500, 50);   // started before the wait: 0
    CountWait(100, 500, 900);  // started after it ended (a timeout): 400
    CountWait(500, 500, 0);    // no time: not a wait
  });
  EXPECT_EQ(d, (std::vector<uint64_t>{4, 1600, 1000}));

  using std::chrono::milliseconds;
  auto h = std::make_shared<HandleState>(1, nullptr);
  const auto waited = delta([&] {
    std::thread finisher([h] {
      std::this_thread::sleep_for(milliseconds(60));
      h->MarkStarted(SteadyNs());
      std::this_thread::sleep_for(milliseconds(40));
      h->Complete(Status::OK());
    });
    EXPECT_TRUE(h->Wait(10000).ok());
    finisher.join();
  });
  EXPECT_EQ(waited[0], 1u);
  EXPECT_GE(waited[1], 100'000'000u);
  EXPECT_GE(waited[2], 60'000'000u);
  EXPECT_GE(waited[1] - waited[2], 40'000'000u);
  EXPECT_EQ(delta([&] { EXPECT_TRUE(h->Wait(10000).ok()); }), (std::vector<uint64_t>(3, 0)));
  auto unfinished = std::make_shared<HandleState>(1, nullptr);
  EXPECT_EQ(delta([&] { EXPECT_EQ(unfinished->Wait(0).code(), Code::kTimeout); }),
            (std::vector<uint64_t>(3, 0)));
}

// Completion is lock-free; a thread that sleeps in Wait must still be woken
// whichever side comes first. Many rounds of a racing waiter and completer.
TEST(HandleState, WaiterIsNeverLeftAsleep) {
  const NoSpinAfter restore;
  for (int round = 0; round < 4000; ++round) {
    // Half the rounds spin a little first (HVD_WAIT_SPIN_US), then sleep.
    HandleState::SetWaitSpin(std::chrono::microseconds(round < 2000 ? 0 : 2));
    auto h = std::make_shared<HandleState>(2, nullptr);
    std::thread waiter([h] {
      bool timed_out = false;
      Status s = h->Wait(10000, &timed_out);
      EXPECT_FALSE(timed_out);
      EXPECT_TRUE(s.ok()) << s.message();
    });
    std::vector<HandleState*> batch{h.get(), h.get()};
    if (round % 2) std::this_thread::yield();
    HandleState::CompleteAll(batch, Status::OK());
    waiter.join();
    ASSERT_TRUE(h->done());
  }
}

// hvd_wait keeps its core for a while (HVD_WAIT_SPIN_US) before it sleeps:
// a completion within the spin is seen without a futex wake-up, one after
// it still wakes the sleeper, and the spin never outlasts the caller's
// timeout.
TEST(HandleState, SpinningWaitSeesCompletionAndKeepsTheTimeout) {
  using Clock = std::chrono::steady_clock;
  const NoSpinAfter restore;
  HandleState::SetWaitSpin(std::chrono::milliseconds(20));
  for (const auto delay : {std::chrono::milliseconds(1), std::chrono::milliseconds(60)}) {
    auto h = std::make_shared<HandleState>(1, nullptr);
    // Before the completer starts its sleep: taken after, the completion
    // could come less than `delay` after it (seen: 0.9 ms of 1).
    const auto start = Clock::now();
    std::thread completer([h, delay] {
      std::this_thread::sleep_for(delay);
      h->Complete(Status::Backend("done"));
    });
    EXPECT_EQ(h->Wait(10000).code(), Code::kBackend);
    EXPECT_GE(Clock::now() - start, delay);
    completer.join();
  }
  HandleState::SetWaitSpin(std::chrono::seconds(1));
  HandleState never(1, nullptr);
  const auto start = Clock::now();
  bool timed_out = false;
  EXPECT_EQ(never.Wait(30, &timed_out).code(), Code::kTimeout);
  EXPECT_TRUE(timed_out);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));  // not the 1 s spin
  const auto poll = Clock::now();
  EXPECT_EQ(never.Wait(0).code(), Code::kTimeout);
  EXPECT_LT(Clock::now() - poll, std::chrono::milliseconds(100));  // a zero timeout never spins
}

// A Progress whose steps answer from a script; the step that finishes
// completes the handle, as a set loop's step completes what it reduced.
struct ScriptedProgress : Progress {
  std::function<Step(int)> script;  // step number -> answer
  HandleState* handle = nullptr;
  int finish_at = -1;  // the step that completes the handle (-1: none)
  std::atomic<int> steps{0}, enters{0}, leaves{0};
  void Enter() override { enters++; }
  void Leave() override { leaves++; }
  Step TryStep() override {
    const int n = steps++;
    if (n == finish_at) {
      handle->Complete(Status::OK());
      return Step::kDid;
    }
    return script(n);
  }
};

std::shared_ptr<ScriptedProgress> Drive(HandleState& h, std::function<Progress::Step(int)> script,
                                        int finish_at) {
  auto p = std::make_shared<ScriptedProgress>();
  p->script = std::move(script);
  p->handle = &h;
  p->finish_at = finish_at;
  h.set_progress(p);
  return p;
}

// hvd_wait steps its set's loop itself while it keeps the core: idle steps
// poll, a step held by another thread is waited for, every session is left.
TEST(HandleState, WaitDrivesItsProgressUntilDone) {
  const NoSpinAfter restore;
  HandleState::SetWaitSpin(std::chrono::milliseconds(200));
  for (const auto answer : {Progress::Step::kIdle, Progress::Step::kBusy}) {
    HandleState h(1, nullptr);
    auto p = Drive(
        h, [answer](int) { return answer; }, 50);
    EXPECT_TRUE(h.Wait(10000).ok());
    EXPECT_EQ(p->steps.load(), 51);
    EXPECT_EQ(p->enters.load(), 1);
    EXPECT_EQ(p->leaves.load(), 1);
  }
  // Without a spin nothing is driven: the waiter sleeps at once.
  HandleState::SetWaitSpin(std::chrono::nanoseconds(0));
  auto h = NewState();
  auto p = Drive(
      *h, [](int) { return Progress::Step::kIdle; }, 0);
  std::thread completer([h] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    h->Complete(Status::OK());
  });
  EXPECT_TRUE(h->Wait(10000).ok());
  completer.join();
  EXPECT_EQ(p->steps.load(), 0);
}

// A loop that has ended (kGone) is not driven again: the waiter sleeps
// until another thread completes the handle.
TEST(HandleState, WaitSleepsOnceTheLoopIsGone) {
  const NoSpinAfter restore;
  HandleState::SetWaitSpin(std::chrono::seconds(1));
  auto h = NewState();
  auto p = Drive(
      *h, [](int) { return Progress::Step::kGone; }, -1);
  std::thread completer([h] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    h->Complete(Status::Backend("closed"));
  });
  EXPECT_EQ(h->Wait(10000).code(), Code::kBackend);
  completer.join();
  EXPECT_EQ(p->steps.load(), 1);
  EXPECT_EQ(p->leaves.load(), 1);
}

// The spin counts from the last step that did work, but never past the
// caller's timeout; idle steps alone end it after the spin.
TEST(HandleState, DrivingKeepsGoingWhileStepsWorkAndKeepsTheTimeout) {
  using Clock = std::chrono::steady_clock;
  const NoSpinAfter restore;
  HandleState::SetWaitSpin(std::chrono::milliseconds(5));
  {
    // 40 ms of working steps (1 ms each), then the one that finishes: far
    // past the 5 ms spin, still on the waiting thread.
    HandleState h(1, nullptr);
    auto p = Drive(
        h,
        [](int) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return Progress::Step::kDid;
        },
        40);
    EXPECT_TRUE(h.Wait(10000).ok());
    EXPECT_EQ(p->steps.load(), 41);
  }
  {
    HandleState never(1, nullptr);
    auto p = Drive(
        never, [](int) { return Progress::Step::kDid; }, -1);
    const auto start = Clock::now();
    bool timed_out = false;
    EXPECT_EQ(never.Wait(30, &timed_out).code(), Code::kTimeout);
    EXPECT_TRUE(timed_out);
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(30));
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
    EXPECT_EQ(p->leaves.load(), 1);
  }
  {
    HandleState idle(1, nullptr);
    auto p = Drive(
        idle, [](int) { return Progress::Step::kIdle; }, -1);
    const auto start = Clock::now();
    EXPECT_EQ(idle.Wait(100).code(), Code::kTimeout);
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(100));
    EXPECT_GT(p->steps.load(), 1);
    EXPECT_EQ(p->enters.load(), 1);  // one session, then asleep until the timeout
  }
}

// The loop's thread parks only while a caller drives; a detached progress
// (the loop ended) is gone for callers, and leaving it is harmless.
TEST(LoopProgress, ParksOnlyWhileDrivenAndEndsGone) {
  LoopProgress p(nullptr);
  EXPECT_FALSE(p.driven());
  EXPECT_FALSE(p.Park());
  p.Enter();
  p.Enter();
  EXPECT_TRUE(p.driven());
  EXPECT_TRUE(p.Park());
  p.Leave();
  EXPECT_TRUE(p.driven());
  EXPECT_EQ(p.TryStep(), Progress::Step::kGone);
  p.Leave();  // the last one: wakes a parked loop, here none
  EXPECT_FALSE(p.driven());
  p.Unpark();
  EXPECT_FALSE(p.Park());
  p.Detach();
  EXPECT_EQ(p.TryStep(), Progress::Step::kGone);
}

}  // namespace
}  // namespace hvd
