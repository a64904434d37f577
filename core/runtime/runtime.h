// The process-wide state behind the C API: configuration, backends, process
// sets (each with its own background loop), the timeline and autotune.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/common/config.h"
#include "core/observability/autotune/autotuner.h"
#include "core/observability/flight_recorder.h"
#include "core/observability/timeline.h"
#include "core/runtime/job_end.h"
#include "core/runtime/liveness.h"
#include "core/runtime/p2p_engine.h"
#include "core/runtime/process_set.h"
#include "core/runtime/watchdog.h"

namespace hvd {

struct InitArgs {
  BackendChoice controller = BackendChoice::kAuto;
  BackendChoice cpu_operations = BackendChoice::kAuto;
  bool use_mpi_comm = false;
  int mpi_comm = 0;
};

struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool homogeneous = true;  // every host runs the same number of ranks
};

class Runtime {
 public:
  static Runtime& Get();

  Status Init(const InitArgs& args);
  Status Shutdown();
  bool initialized();

  // Valid while initialised.
  const Topology& topology() const { return topo_; }
  const Config& config() const { return config_; }
  const char* controller_name() const { return controller_name_; }
  const char* data_name() const { return data_name_; }
  Timeline& timeline() { return timeline_; }
  Autotuner* autotuner() { return autotuner_.get(); }

  // Hands entries to their set's loop (all-or-nothing; one set per call).
  Status Submit(std::unique_ptr<TensorEntry>* entries, size_t count);
  // Rank of this process inside a set, its size, membership; errors for
  // unknown ids.
  Status SetInfo(int32_t id, int* rank, int* size);

  // Timeline control (hvd_start_timeline / hvd_stop_timeline, HVD_TIMELINE).
  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();

  // Next automatic name for an op in a set ("allreduce.noname.7"); equal on
  // all ranks as long as they make such calls in the same order.
  std::string AutoName(OpType type, int32_t set);

  // Called by the world set's loop: creates or removes a process set
  // (collective over the members, in decision order) and completes `entry`.
  Status ApplyProcessSetChange(const Response& response, TensorEntry* entry);
  // Called by a set's loop when it ends: when the world ends, every other
  // set ends with it.
  void OnSetFinished(ProcessSet& ps, const Status& final_status);

  // Point-to-point (runtime_p2p.cc): posts `ops`, whose peers are ranks of
  // `set`, on the p2p engine; each completes `state` once.
  Status SubmitP2P(const char* fn, int32_t set, std::vector<P2POp> ops,
                   const std::shared_ptr<HandleState>& state);

  // Liveness (runtime/deadlines.cc): what `set_ranks` (ranks of `ps`) say
  // about `tensor`; which of the set's other ranks are gone or silent
  // (empty when all answer). Both probe, so they take up to a second.
  std::string DescribeRanks(const ProcessSet& ps, const std::vector<int>& set_ranks,
                            const std::string& tensor);
  std::string DescribeGone(const ProcessSet& ps);

  // A failure the job cannot survive (a deadline, a lost peer): the flight
  // record is dumped and the job is made to end (job_end.h). Call before the
  // callers get the error: they may exit at once.
  void NoteJobFailure(const Status& why);

  // The flight recorder (runtime/flight.cc). Dump writes this rank's record
  // to `path`, or to HVD_FLIGHT_RECORDER_DIR/hvd_flight.rank<N>.json when
  // empty; `reason` goes into the file. Valid after hvd_shutdown too.
  FlightRecorder& flight() { return flight_; }
  Status DumpFlightRecord(const std::string& path, const std::string& reason,
                          std::string* written = nullptr);
  // The process exits with `status` (on_exit): ends it at once after such a
  // failure, else shuts hvd down.
  void OnProcessExit(int status);

 private:
  Runtime() = default;
  Status CreateWorld(const InitArgs& args, std::unique_ptr<ProcessSet>* out);
  Status ComputeTopology(Comm* comm);
  Status AddProcessSet(const std::vector<int32_t>& ranks, int32_t* id);
  Status RemoveProcessSet(int32_t id);
  // Collective over ps's controller Comm; `tag` names the set in the log.
  // The set's data communicator and its plan (core/dataplane/), from the
  // backend's Comm and the members' hosts. Collective over the members.
  Status MakeDataPlane(ProcessSet& ps, const std::string& tag);
  Status OpenChannel(ProcessSet& ps, const std::string& tag);
  std::string BindHost() const;
  void StartLoop(ProcessSet& ps);
  void StopAll(const Status& why);
  void StartFlightRecorder();  // at init (runtime/flight.cc)
  // Collective at init: the p2p engine's Comm (runtime_p2p.cc).
  void StartP2P(ProcessSet& world);
  ProcessSet* FindSet(int32_t id);  // sets_mu_ held
  // The set if it exists and this rank is a member, else why not (sets_mu_ held).
  Status FindMemberSet(int32_t id, ProcessSet** out);
  // This rank's answer to a liveness probe.
  std::string DescribeSelf(const ProbeQuestion& q);
  // The watchdog's check: fails operations past HVD_OP_TIMEOUT_SECONDS that
  // the coordinator could not fail (a collective that never returns, a
  // coordinator that does not answer).
  void CheckDeadlines();
  void Expire(int32_t set, const Status& why, bool in_collective);

  std::mutex init_mu_;  // serialises Init/Shutdown
  std::atomic<bool> running_{false};
  Config config_;
  Topology topo_;
  std::vector<std::string> hosts_;  // by world rank
  const char* controller_name_ = "";
  const char* data_name_ = "";
  BackendChoice controller_choice_ = BackendChoice::kAuto;
  BackendChoice data_choice_ = BackendChoice::kAuto;
  Timeline timeline_;
  TunedParams tuned_;  // the settings a new set starts with
  // Handles get their set's LoopProgress (Config::wait_progress, and
  // hvd_wait spins at all).
  bool wait_progress_ = false;
  std::unique_ptr<Autotuner> autotuner_;
  std::unique_ptr<Liveness> liveness_;

  std::mutex sets_mu_;  // guards sets_ against readers on caller threads
  std::map<int32_t, std::unique_ptr<ProcessSet>> sets_;
  int32_t next_set_id_ = 1;
  std::mutex names_mu_;
  std::map<std::pair<int, int32_t>, int64_t> auto_names_;
  JobEnd job_end_;
  FlightRecorder flight_;
  std::atomic<bool> failure_dumped_{false};
  int flight_rank_ = 0, flight_size_ = 1;  // kept after shutdown for late dumps
  std::unique_ptr<P2PEngine> p2p_;         // null when the world has one rank
  Status p2p_unavailable_;                 // why p2p_ is null
  std::unique_ptr<Watchdog> watchdog_;     // last: stops before what it watches goes
};

}  // namespace hvd
