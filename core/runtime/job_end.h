// Makes sure a job ends after a failure that it cannot recover from in
// place: an operation past its deadline (HVD_OP_TIMEOUT_SECONDS) or a lost
// peer. The failed rank stays wedged (stopped, hung, or stuck in a
// collective that never returns), so the launcher would wait for it
// forever unless the survivors tell it the job failed:
//
//  - Under MPI the job is aborted (MPI_Abort) as soon as the process exits
//    or calls hvd_shutdown, and at the latest a grace period after the
//    error was delivered, so a program that keeps computing ends too.
//    MPI_Finalize, which would wait for the wedged rank, is never reached.
//  - Under any launcher a process that exits with code 0 after such an
//    error exits with 1 instead: a launcher stops the job on a non-zero
//    exit (hvdrun: SIGTERM, then SIGKILL after --grace-period), not on 0.
//    Not in elastic jobs, whose driver replaces failed workers and where a
//    worker may leave with 0 on purpose.
//
// A new hvd_init (elastic reset) starts with a clean slate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/backends/comm.h"
#include "core/common/status.h"

namespace hvd {

class JobEnd {
 public:
  JobEnd() = default;
  ~JobEnd();
  JobEnd(const JobEnd&) = delete;
  JobEnd& operator=(const JobEnd&) = delete;

  // At init: `mpi` is the MPI communicator whose Abort() ends the job (null
  // when the job does not run on MPI); `abort_grace` bounds how long a
  // process that keeps running after the error lives on (abort disabled
  // when `mpi_abort` is false: HVD_MPI_ABORT_ON_TIMEOUT=0); `elastic`
  // keeps exit code 0.
  void Arm(std::shared_ptr<Comm> mpi, bool mpi_abort, std::chrono::milliseconds abort_grace,
           bool elastic);
  // At shutdown without a failure: lets the communicator go.
  void Disarm();

  // Records a failure the job cannot survive (first one wins) and, under
  // MPI, schedules the abort a grace period later.
  void Fail(const Status& why);
  bool failed() const;

  // hvd_shutdown after a failure: under MPI aborts now (a negotiated
  // shutdown and MPI_Finalize would wait for the wedged rank).
  void OnShutdown();
  // The process exits with `status` after a failure: ends it now, without
  // the exit handlers that would wait for the wedged rank. Returns only
  // when there was no failure.
  void OnExit(int status);

 private:
  void AbortNow(const char* why);
  void Timer();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Comm> mpi_;
  bool mpi_abort_ = true;
  bool elastic_ = false;
  std::chrono::milliseconds grace_{0};
  Status failure_;
  bool failed_ = false;
  bool stop_timer_ = false;
  std::thread timer_;
};

}  // namespace hvd
