// One helper thread that runs jobs in the order they are posted; the poster
// collects each job's status in the same order. Hierarchical allreduce runs
// the cross-host step of one chunk here while the calling thread does the
// host-local steps of the neighbouring chunks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/common/status.h"

namespace hvd {

class PipelineWorker {
 public:
  PipelineWorker();
  ~PipelineWorker();  // waits for the job in progress, drops the rest
  PipelineWorker(const PipelineWorker&) = delete;
  PipelineWorker& operator=(const PipelineWorker&) = delete;

  void Post(std::function<Status()> job);
  // Blocks until the oldest job not yet collected has run; returns its status.
  Status Collect();
  // Jobs posted and not yet collected.
  int outstanding() const { return outstanding_; }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<Status()>> todo_;
  std::deque<Status> done_;
  bool stop_ = false;
  int outstanding_ = 0;  // touched by the posting thread only
  std::thread thread_;   // last: starts once the members above exist
};

}  // namespace hvd
