// Unit tests of the handle table and the tensor queue: the per-tensor
// bookkeeping every async op goes through.
#include <gtest/gtest.h>
#include <poll.h>

#include <string>
#include <vector>

#include "core/runtime/handle_table.h"
#include "core/runtime/tensor_queue.h"

namespace hvd {
namespace {

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

TensorEntry Entry(const std::string& name, int32_t set = 0) {
  TensorEntry e;
  e.request.name = name;
  e.request.process_set = set;
  e.handle = NewState();
  return e;
}

TEST(TensorQueue, DuplicateNameUndoesTheWholeCall) {
  TensorQueue q;
  TensorEntry one = Entry("a");
  ASSERT_TRUE(q.Add(&one, 1).ok());
  std::vector<TensorEntry> group;
  group.push_back(Entry("b"));
  group.push_back(Entry("c"));
  group.push_back(Entry("a"));  // already pending
  Status s = q.Add(group.data(), group.size());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'a' is already pending in process set 0"), std::string::npos);
  EXPECT_EQ(q.PendingCount(), 1u);  // b and c were taken back out
  std::vector<TensorEntry> twice;
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
  TensorEntry a = Entry("a");
  ASSERT_TRUE(q.Add(&a, 1).ok());
  EXPECT_TRUE(readable());
  q.Sleeping(false);  // awake again: drains it
  EXPECT_FALSE(readable());
  TensorEntry b = Entry("b");
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
    TensorEntry e = Entry(n);
    ASSERT_TRUE(q.Add(&e, 1).ok());
  }
  const std::vector<std::string> names{"y", "missing", "x"};
  std::vector<TensorQueue::Taken> taken(names.size());
  std::vector<TensorEntry*> found(names.size(), nullptr);
  EXPECT_EQ(q.Take(names, taken.data(), found.data()), 2u);
  ASSERT_NE(found[0], nullptr);
  EXPECT_EQ(found[0]->request.name, "y");
  EXPECT_EQ(found[1], nullptr);
  ASSERT_NE(found[2], nullptr);
  EXPECT_EQ(found[2]->request.name, "x");
  EXPECT_EQ(q.PendingCount(), 0u);
  TensorEntry again = Entry("x");  // the name is free again
  EXPECT_TRUE(q.Add(&again, 1).ok());
}

}  // namespace
}  // namespace hvd
