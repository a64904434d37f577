// WaitNotice (core/common/wait_notice.h): a blocking step that waits for
// other ranks says so every period, and stops saying it once it returns.
#include "core/common/wait_notice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace hvd {
namespace {

using std::chrono::milliseconds;

TEST(WaitNotice, NotifiesEveryPeriodWithTheTimeWaited) {
  std::mutex mu;
  std::vector<double> waited;
  std::atomic<int> calls{0};
  {
    WaitNotice notice(milliseconds(20), [&](double s) {
      std::lock_guard<std::mutex> lock(mu);
      waited.push_back(s);
      calls.fetch_add(1);
    });
    const auto start = std::chrono::steady_clock::now();
    while (calls.load() < 3 &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(waited.size(), 3u);
  for (size_t i = 0; i < waited.size(); ++i) {
    // The i-th notice comes no earlier than (i + 1) periods.
    EXPECT_GE(waited[i], 0.020 * static_cast<double>(i + 1) - 1e-3) << i;
    if (i > 0) {
      EXPECT_GT(waited[i], waited[i - 1]) << i;
    }
  }
}

TEST(WaitNotice, IsSilentWhenTheWaitEndsFirstAndStopsAtOnce) {
  std::atomic<int> calls{0};
  const auto start = std::chrono::steady_clock::now();
  {
    WaitNotice notice(std::chrono::seconds(30), [&](double) { calls.fetch_add(1); });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(calls.load(), 0);
  // A period of 0 (HVD_STALL_CHECK_DISABLE) never notifies.
  {
    WaitNotice off(milliseconds(0), [&](double) { calls.fetch_add(1); });
  }
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace hvd
