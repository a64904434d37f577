// A blocking call that waits for other ranks (MPI_Init_thread, which returns
// only once every rank of the job has called it; the first collective on a
// communicator) cannot be given a deadline, but it need not be silent:
// while one is in scope, a thread calls `notify` every `period` with the
// seconds waited so far. Destroying it stops the thread at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hvd {

class WaitNotice {
 public:
  // period <= 0: never notifies (and starts no thread).
  WaitNotice(std::chrono::milliseconds period, std::function<void(double waited_s)> notify);
  ~WaitNotice();
  WaitNotice(const WaitNotice&) = delete;
  WaitNotice& operator=(const WaitNotice&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace hvd
