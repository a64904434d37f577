// HVD_HIERARCHICAL_ALLREDUCE for host memory: a Comm decorator over a
// process set's data communicator (MPI or Gloo). An allreduce runs in three
// steps, chunk by chunk (allreduces too small to gain from it, which the
// flat communicator's latency-bound algorithms run faster, stay flat):
//   1. reduce-scatter inside the host (host-local communicator: shared
//      memory under MPI, loopback under Gloo): local rank k < K gets the
//      host's sum of share k of the chunk;
//   2. allreduce of share k across hosts, among local rank k of every host
//      (K streams per host link, each carrying 1/K of the bytes);
//   3. allgather of the shares inside the host.
// Each host link then carries 2(H-1)/H of the bytes instead of a flat
// ring's 2(P-1)/P. Step 2 of chunk c runs on a helper thread while the
// calling thread does step 3 of chunk c-1 and step 1 of chunk c+1, so the
// host-local work hides behind the network. Every other call, and
// allreduces of a set with no host structure, go to the flat communicator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/forwarding_comm.h"
#include "core/common/config.h"
#include "core/dataplane/decorators/pipeline_worker.h"
#include "core/dataplane/host_plan.h"

namespace hvd {

class HierarchicalCpuComm : public ForwardingComm {
 public:
  // `flat` spans the set (every call but allreduce goes there); `local` my
  // host's ranks; `cross` the carriers of my share (null when I carry none).
  // `concurrent`: local and cross may be used from two threads at once
  // (Gloo; MPI with MPI_THREAD_MULTIPLE). Allreduces of fewer than
  // `min_bytes` go to `flat`.
  HierarchicalCpuComm(std::shared_ptr<Comm> flat, std::shared_ptr<Comm> local,
                      std::unique_ptr<Comm> cross, const HostPlan& plan, bool concurrent,
                      int64_t chunk_bytes, int64_t min_bytes);

  // Fuse every size (the flat MPI Comm runs tensors from 1 MiB alone): each
  // call fills and drains the cross-host pipeline, and one of a chunk or
  // less runs its three steps in turn with the link idle in two of them.
  // Stages run chunk by chunk: fill before the chunk's reduce-scatter,
  // drain after its allgather; pipelined (overlapping), on the calling
  // thread while the worker carries the neighbouring chunk across hosts.
  CommCaps caps() const override;
  // The chunk size reaches the flat, host-local and cross-host Comms too.
  void Tune(const CommTuning& tuning) override;
  // Also wakes a cross step waiting on its TCP ring.
  void Abort() override;

 protected:
  // `in` may equal `out`.
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  // One allreduce's buffers, element size and stages.
  struct Call;
  // Elements per local rank for a chunk of n elements: shares for the
  // carriers, nothing for the others.
  std::vector<int64_t> LocalCounts(int64_t n) const;
  int64_t Mine(int64_t n) const;  // my share of a chunk of n elements
  uint8_t* Slot(int64_t c);       // chunk c's share slot in scratch_
  // Chunk c's host-local steps: reduce-scatter into slot c % 2; allgather
  // from it. With the stages: fill first; drain after.
  Status Scatter(const Call& call, int64_t c);
  Status Gather(const Call& call, int64_t c);
  Status FillAndScatter(const Call& call, int64_t c);
  Status GatherAndDrain(const Call& call, int64_t c);
  Status Serial(const AllreduceOptions& args, const Call& call);
  Status Pipelined(const Call& call);

  std::shared_ptr<Comm> local_;  // shared memory where it can be (dataplane/build.h)
  std::unique_ptr<Comm> cross_;
  HostPlan plan_;
  bool concurrent_;
  int64_t chunk_bytes_;
  int64_t min_bytes_;
  std::vector<uint8_t> scratch_;            // two share slots, reused across calls
  std::unique_ptr<PipelineWorker> worker_;  // started on the first pipelined call
};

}  // namespace hvd
