#include "core/runtime/watchdog.h"

namespace hvd {

Watchdog::Watchdog(std::chrono::milliseconds period, std::function<void()> check)
    : period_(period), check_(std::move(check)), thread_(&Watchdog::Run, this) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
    lock.unlock();
    check_();
    lock.lock();
  }
}

}  // namespace hvd
