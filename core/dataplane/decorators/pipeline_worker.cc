#include "core/dataplane/decorators/pipeline_worker.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace hvd {

PipelineWorker::PipelineWorker() : thread_([this] { Run(); }) {}

PipelineWorker::~PipelineWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    todo_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void PipelineWorker::Post(std::function<Status()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    todo_.push_back(std::move(job));
  }
  ++outstanding_;
  cv_.notify_all();
}

Status PipelineWorker::Collect() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !done_.empty(); });
  Status s = std::move(done_.front());
  done_.pop_front();
  --outstanding_;
  return s;
}

void PipelineWorker::Run() {
#ifdef __linux__
  prctl(PR_SET_NAME, "hvd-hier-cross", 0, 0, 0);
#endif
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !todo_.empty(); });
    if (stop_) return;
    std::function<Status()> job = std::move(todo_.front());
    todo_.pop_front();
    lock.unlock();
    Status s = job();
    lock.lock();
    done_.push_back(std::move(s));
    cv_.notify_all();
  }
}

}  // namespace hvd
