#include "core/runtime/job_end.h"

#include <unistd.h>

#include <cstdio>

#include "core/common/logging.h"

namespace hvd {

JobEnd::~JobEnd() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_timer_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

void JobEnd::Arm(std::shared_ptr<Comm> mpi, bool mpi_abort, std::chrono::milliseconds abort_grace,
                 bool elastic) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_timer_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  std::lock_guard<std::mutex> lock(mu_);
  mpi_ = std::move(mpi);
  mpi_abort_ = mpi_abort;
  grace_ = abort_grace;
  elastic_ = elastic;
  failure_ = Status::OK();
  failed_ = false;
  stop_timer_ = false;
}

void JobEnd::Disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_) mpi_.reset();
}

void JobEnd::Fail(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_) return;
  failed_ = true;
  failure_ = why;
  if (!mpi_ || !mpi_abort_) return;
  HVD_LOG(kError) << "MPI cannot leave a failed collective or finalise without the failed rank: "
                     "the job is aborted when this process exits or calls hvd_shutdown, and at "
                     "the latest in "
                  << grace_.count() / 1000.0 << " s (HVD_MPI_ABORT_ON_TIMEOUT=0 keeps it running)";
  timer_ = std::thread(&JobEnd::Timer, this);
}

bool JobEnd::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

void JobEnd::Timer() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, grace_, [this] { return stop_timer_; })) return;
  lock.unlock();
  AbortNow("the grace period after the failure ran out");
}

void JobEnd::AbortNow(const char* why) {
  std::shared_ptr<Comm> mpi;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_ || !mpi_ || !mpi_abort_) return;
    mpi = mpi_;
    failure = failure_.message();
  }
  HVD_LOG(kError) << "aborting the MPI job (" << why << ") after: " << failure;
  std::fflush(nullptr);
  mpi->Abort();  // MPI_Abort: does not return once the launcher acts
  _exit(1);
}

void JobEnd::OnShutdown() {
  AbortNow("hvd_shutdown after the failure");
}

void JobEnd::OnExit(int status) {
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) return;
    failure = failure_.message();
  }
  AbortNow("the process exits after the failure");
  if (status == 0 && elastic_) return;
  if (status == 0) {
    HVD_LOG(kError) << "the process exits with code 0 after a failure that ended the job ("
                    << failure << "); exiting with 1 so that the launcher stops the job";
    status = 1;
  }
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace hvd
