// A process set's data plane, decided once when the set is made: which
// transport runs which step of its collectives, from the Config and the
// hosts of the set's members. Pure (no communication), so that hvdrun
// --explain prints the same plan without starting a job and unit tests
// check every decision; build.h carries the plan out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backends/transport.h"
#include "core/common/config.h"
#include "core/dataplane/host_plan.h"

namespace hvd {

struct PlanInputs {
  std::string name;                       // "process set 0", in messages
  Transport backend = Transport::kOther;  // the set's data backend
  // The backend may be called from two threads at once (Gloo; MPI with
  // MPI_THREAD_MULTIPLE): the hierarchy then pipelines its steps.
  bool threads = false;
  std::vector<std::string> hosts;  // host key of each member, in set rank order
  int rank = 0;                    // this member
};

// How a set's allreduces (and, on one host, its other collectives) travel.
enum class Route {
  kAlone,            // one member: nothing crosses a wire
  kBackend,          // every collective on the backend
  kSharedMemory,     // one host: host-local collectives through a shared segment
  kRingAcrossHosts,  // one member on each host: large allreduces on a TCP ring
  kHierarchical,     // host-local reduce-scatter, cross-host allreduce, host-local allgather
};

// What carries the hierarchy's cross-host step.
enum class CrossStep {
  kNone,          // this rank carries no share
  kBackend,       // the backend's allreduce (Gloo's ring)
  kQuietBackend,  // MPI's, as MpiRingAllreduce (sleeps while it waits)
  kTcpRing,       // hvd's own ring on TCP sockets (algorithms/tcp_ring.h)
};

struct DataPlan {
  std::string name;
  Transport backend = Transport::kOther;
  int ranks = 0;
  Route route = Route::kBackend;
  HostPlan hosts;
  // Allreduces of fewer bytes stay on the backend (ring, hierarchy).
  int64_t min_bytes = 0;
  int64_t chunk_bytes = 0;  // the hierarchy's pipeline pieces (0: its default)
  CrossStep cross = CrossStep::kNone;
  // HVD_HIERARCHICAL_CROSS=auto: where the TCP ring cannot be used (a
  // member has an RDMA NIC under MPI, or cannot reach its neighbour), the
  // backend carries the step instead.
  bool cross_may_fall_back = false;
  bool local_shm = false;  // the hierarchy's host-local steps through shared memory
  bool pipelined = false;  // the hierarchy's cross step beside its host-local steps
  std::string why;         // why the route is the backend, where there is a reason
  // What set-up changed on the way (a fallback that every member took).
  std::vector<std::string> changes;

  // One line: "process set 0 (gloo, 4 ranks on 2 hosts): allreduce < ...".
  std::string Describe() const;
};

DataPlan PlanDataPlane(const Config& config, const PlanInputs& in);

// The size from which the hierarchy or the ring takes a set's allreduces
// (HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES, else the backend's crossover).
int64_t HierarchyMinBytes(const Config& config, Transport backend);

// "64 KiB", "2 MiB", "1000 B": sizes in plans.
std::string ByteSize(int64_t bytes);

}  // namespace hvd
