// The process-wide state behind the C API: configuration, backends, process
// sets, the tensor queue and the background thread that negotiates and
// executes collectives.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/config.h"
#include "core/observability/autotune/autotuner.h"
#include "core/observability/timeline.h"
#include "core/runtime/process_set.h"
#include "core/runtime/tensor_queue.h"

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

  // Hands entries to the background thread (all-or-nothing).
  Status Submit(TensorEntry* entries, size_t count);
  // Rank of this process inside a set, its size, membership; errors for
  // unknown ids.
  Status SetInfo(int32_t id, int* rank, int* size);

  // Timeline control (hvd_start_timeline / hvd_stop_timeline, HVD_TIMELINE).
  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();

  // Next automatic name for an op in a set ("allreduce.noname.7"); equal on
  // all ranks as long as they make such calls in the same order.
  std::string AutoName(OpType type, int32_t set);

 private:
  Runtime() = default;
  void Loop();
  std::chrono::steady_clock::duration CycleDuration() const;
  // One negotiation + execution cycle of one set; sets *stop on shutdown.
  Status CycleSet(ProcessSet& ps, bool shutdown, bool* stop, std::vector<int32_t>* shutdown_ranks);
  void ApplyTuned(const TunedParams& p);
  void Execute(ProcessSet& ps, const Response& response);
  void ApplyProcessSetChange(const Response& response, TensorEntry* entry);
  Status ComputeTopology(Comm* comm);

  std::mutex init_mu_;  // serialises Init/Shutdown
  std::atomic<bool> running_{false};
  std::atomic<bool> shutdown_requested_{false};
  std::thread thread_;
  Config config_;
  Topology topo_;
  const char* controller_name_ = "";
  const char* data_name_ = "";
  TensorQueue queue_;
  Timeline timeline_;

  std::mutex sets_mu_;  // guards sets_ against readers on caller threads
  std::map<int32_t, std::unique_ptr<ProcessSet>> sets_;
  int32_t next_set_id_ = 1;
  std::mutex names_mu_;
  std::map<std::pair<int, int32_t>, int64_t> auto_names_;
  Status loop_fatal_;  // set by Execute when the backend is unusable
  TunedParams tuned_;  // what the loop uses; autotune may change it
  std::unique_ptr<Autotuner> autotuner_;
};

}  // namespace hvd
