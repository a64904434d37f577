// The runtime's side of the flight recorder (observability/flight_recorder.h):
// dumping it on a failure, on SIGUSR1 and on request.
#include <semaphore.h>
#include <signal.h>

#include <thread>

#include "core/common/logging.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace {

sem_t g_dump_request;

// Only async-signal-safe work here: the dump itself runs on a thread.
void OnSigusr1(int) {
  sem_post(&g_dump_request);
}

// SIGUSR1 dumps the record, unless the program handles SIGUSR1 itself (its
// handler is left alone). Once per process; the thread lives as long.
void InstallDumpSignal() {
  static const bool installed = [] {
    struct sigaction old {};
    if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return false;
    if (sem_init(&g_dump_request, 0, 0) != 0) return false;
    std::thread([] {
      for (;;) {
        while (sem_wait(&g_dump_request) != 0) {
        }
        std::string path;
        const Status s = Runtime::Get().DumpFlightRecord("", "SIGUSR1", &path);
        if (s.ok()) {
          HVD_LOG(kWarning) << "flight record written to " << path << " (SIGUSR1)";
        } else {
          HVD_LOG(kError) << s.message();
        }
      }
    }).detach();
    struct sigaction sa {};
    sa.sa_handler = OnSigusr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    return sigaction(SIGUSR1, &sa, nullptr) == 0;
  }();
  (void)installed;
}

}  // namespace

void Runtime::StartFlightRecorder() {
  flight_.Reset(static_cast<size_t>(config_.flight_recorder_size));
  failure_dumped_ = false;
  flight_rank_ = topo_.rank;
  flight_size_ = topo_.size;
  if (flight_.on()) InstallDumpSignal();
}

Status Runtime::DumpFlightRecord(const std::string& path, const std::string& reason,
                                 std::string* written) {
  if (!flight_.on()) {
    return Status::Invalid(
        "the flight recorder is off (HVD_FLIGHT_RECORDER_SIZE=0) or hvd was "
        "never initialised");
  }
  std::string where = path;
  if (where.empty()) {
    const std::string& dir =
        config_.flight_recorder_dir.empty() ? "." : config_.flight_recorder_dir;
    where = dir + "/hvd_flight.rank" + std::to_string(flight_rank_) + ".json";
  }
  FlightRecorder::Header h;
  h.rank = flight_rank_;
  h.size = flight_size_;
  h.host = config_.launch.host;
  h.reason = reason;
  HVD_RETURN_IF_ERROR(flight_.Dump(where, h));
  if (written) *written = where;
  return Status::OK();
}

void Runtime::NoteJobFailure(const Status& why) {
  // The record first: under MPI, job_end_ may abort the job soon after.
  if (flight_.on() && !failure_dumped_.exchange(true)) {
    std::string path;
    const Status s = DumpFlightRecord("", why.message(), &path);
    if (s.ok()) {
      HVD_LOG(kError) << "flight record written to " << path << " (tools/hvd_flight reads it)";
    } else {
      HVD_LOG(kError) << s.message();
    }
  }
  job_end_.Fail(why);
}

}  // namespace hvd
