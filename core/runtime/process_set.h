// A group of ranks that negotiates and communicates on its own: the world
// is set 0; hvd_add_process_set creates more while the job runs.
#pragma once

#include <memory>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"
#include "core/coordination/controller.h"
#include "core/coordination/fusion.h"

namespace hvd {

class GpuSet;  // core/gpu/gpu_exec.h

struct ProcessSet {
  int32_t id = 0;
  std::vector<int> ranks;  // global ranks, ascending
  // Null on ranks that are not members.
  std::shared_ptr<Comm> controller_comm;
  std::shared_ptr<Comm> data_comm;
  std::unique_ptr<Controller> controller;
  FusionBuffer fusion;
  // GPU state (hvd's CUDA streams, device fusion buffers, the NCCL
  // communicator), made on the set's first CUDA response; null in CPU-only
  // use. Last member: it refers to the comms above and must go first.
  std::shared_ptr<GpuSet> gpu;

  // The set's GPU state, made on first use (CUDA builds only).
  GpuSet& Gpu(const Config& config);

  bool member() const { return controller_comm != nullptr; }
  int rank() const { return member() ? controller_comm->rank() : -1; }
  int size() const { return static_cast<int>(ranks.size()); }
};

}  // namespace hvd
