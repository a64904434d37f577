// A thread that wakes every `period` to run a check, and otherwise sleeps
// (no cost while nothing is due). The runtime uses it to enforce the
// operation deadline on collectives that a blocked backend call would
// otherwise hold forever.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hvd {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds period, std::function<void()> check);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Run();

  std::chrono::milliseconds period_;
  std::function<void()> check_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hvd
