// HVD_HIERARCHICAL_ALLREDUCE for host memory: a Comm decorator over a
// process set's data communicator (MPI or Gloo). An allreduce runs in three
// steps, chunk by chunk:
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

#include "core/backends/comm.h"
#include "core/backends/hierarchical/host_plan.h"
#include "core/backends/hierarchical/pipeline_worker.h"
#include "core/common/config.h"

namespace hvd {

class HierarchicalCpuComm : public Comm {
 public:
  // `local` spans my host's ranks; `cross` the carriers of my share (null
  // when I carry none). `concurrent`: local and cross may be used from two
  // threads at once (Gloo; MPI with MPI_THREAD_MULTIPLE).
  HierarchicalCpuComm(std::shared_ptr<Comm> flat, std::unique_ptr<Comm> local,
                      std::unique_ptr<Comm> cross, const HostPlan& plan, bool concurrent,
                      int64_t chunk_bytes);

  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  const char* backend_name() const override { return flat_->backend_name(); }
  void SetAllreduceChunkBytes(int64_t bytes) override;
  int64_t fusion_solo_bytes() const override { return flat_->fusion_solo_bytes(); }

  Status AllreduceBits(uint64_t* w, size_t n, BitOp op) override {
    return flat_->AllreduceBits(w, n, op);
  }
  Status GatherBytes(const std::string& mine, int root, std::vector<std::string>* all) override {
    return flat_->GatherBytes(mine, root, all);
  }
  Status BroadcastBytes(std::string* bytes, int root) override {
    return flat_->BroadcastBytes(bytes, root);
  }
  Status AllgatherBytes(const std::string& mine, std::vector<std::string>* all) override {
    return flat_->AllgatherBytes(mine, all);
  }

  Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op) override {
    return AllreduceFrom(buf, buf, count, dt, op);
  }
  // `in` may equal `out`.
  Status AllreduceFrom(const void* in, void* out, int64_t count, DataType dt, ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& b) override {
    return flat_->Allgatherv(in, out, b);
  }
  Status Broadcast(void* buf, int64_t bytes, int root) override {
    return flat_->Broadcast(buf, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& s, void* out,
                   const std::vector<int64_t>& r) override {
    return flat_->Alltoallv(in, s, out, r);
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override {
    return flat_->Reducescatter(in, out, counts, dt, op);
  }
  Status Barrier() override { return flat_->Barrier(); }
  Status Split(const std::vector<int>& r, const std::string& t, std::unique_ptr<Comm>* o) override {
    return flat_->Split(r, t, o);
  }

 private:
  // Elements per local rank for a chunk of n elements: shares for the
  // carriers, nothing for the others.
  std::vector<int64_t> LocalCounts(int64_t n) const;
  Status Pipelined(const uint8_t* in, uint8_t* out, int64_t count, int64_t chunk, size_t esize,
                   DataType dt, ReduceOp op);

  std::shared_ptr<Comm> flat_;
  std::unique_ptr<Comm> local_;
  std::unique_ptr<Comm> cross_;
  HostPlan plan_;
  bool concurrent_;
  int64_t chunk_bytes_;
  std::vector<uint8_t> scratch_;            // two share slots, reused across calls
  std::unique_ptr<PipelineWorker> worker_;  // started on the first pipelined call
};

// The hook where a process set's data communicator is made: when the set's
// ranks span more than one host and some host holds more than one rank,
// wraps *data in HierarchicalCpuComm (unless HVD_HIERARCHICAL_ALLREDUCE=0).
// Collective over the set's members; `host_key` names this rank's host,
// `tag` is unique per set and equal on its members.
Status MaybeHierarchicalCpu(const Config& config, const std::string& host_key,
                            const std::string& tag, std::shared_ptr<Comm>* data);

}  // namespace hvd
