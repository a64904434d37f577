// A group of ranks that negotiates and communicates on its own: the world
// is set 0; hvd_add_process_set creates more while the job runs. Each set a
// rank belongs to has its own queue, negotiation channel and background
// loop (SetLoop), so sets never wait on each other and overlapping sets
// cannot deadlock.
#pragma once

#include <memory>
#include <vector>

#include "core/backends/comm.h"
#include "core/backends/control_channel.h"
#include "core/common/config.h"
#include "core/coordination/fusion.h"
#include "core/dataplane/plan.h"
#include "core/runtime/tensor_queue.h"

namespace hvd {

class GpuSet;   // core/gpu/gpu_exec.h
class SetLoop;  // core/runtime/set_loop.h

struct ProcessSet {
  ProcessSet();
  ~ProcessSet();

  int32_t id = 0;
  int64_t submitted = 0;   // this rank's submissions so far (the flight recorder's set_seq)
  std::vector<int> ranks;  // global ranks, ascending
  // Null on ranks that are not members. controller_comm is the host
  // backend the channel was opened over (and set-up collectives use).
  std::shared_ptr<Comm> controller_comm;
  std::shared_ptr<Comm> data_comm;
  DataPlan plan;  // which transport runs which step of data_comm's calls
  std::unique_ptr<ControlChannel> channel;
  TensorQueue queue;
  FusionBuffer fusion;
  // GPU state (hvd's CUDA streams, device fusion buffers, the NCCL
  // communicator), made on the set's first CUDA response; null in CPU-only
  // use. It refers to the comms above and must go before them.
  std::shared_ptr<GpuSet> gpu;
  // Last: the loop uses everything above until it is joined.
  std::unique_ptr<SetLoop> loop;

  // The set's GPU state, made on first use (CUDA builds only).
  GpuSet& Gpu(const Config& config);

  bool member() const { return controller_comm != nullptr; }
  int rank() const { return member() ? controller_comm->rank() : -1; }
  int size() const { return static_cast<int>(ranks.size()); }
};

}  // namespace hvd
