#include "core/common/wait_notice.h"

#include <utility>

namespace hvd {

WaitNotice::WaitNotice(std::chrono::milliseconds period, std::function<void(double)> notify) {
  if (period.count() <= 0 || !notify) return;
  thread_ = std::thread([this, period, notify = std::move(notify)] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    for (auto next = start + period;; next += period) {
      if (cv_.wait_until(lock, next, [this] { return done_; })) return;
      notify(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  });
}

WaitNotice::~WaitNotice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace hvd
