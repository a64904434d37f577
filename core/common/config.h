// Configuration read once at init from HVD_* variables (HOROVOD_* accepted
// as aliases, HVD_* wins), together with the launcher's variables
// (launch_env.h). This and launch_env.cc are the only readers of the
// environment; docs/tuning.md lists every variable. Values set in the
// environment are marked "fixed" so autotune leaves them alone.
#pragma once

#include <cstdint>
#include <string>

#include "core/common/launch_env.h"
#include "core/common/status.h"

namespace hvd {

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

enum class BackendChoice { kAuto, kMpi, kGloo };

// How CUDA tensors move (HVD_GPU_OPERATIONS): NCCL, or staging through
// pinned host memory over the CPU-operations backend ("mpi" and "gloo" both
// mean staging; the backend is HVD_CPU_OPERATIONS's). kAuto: NCCL when built.
enum class GpuOperations { kAuto, kNccl, kStaging };

// How a process set's negotiation messages travel (HVD_CONTROL_CHANNEL).
// kAuto: TCP sockets when the set spans hosts and every member reaches the
// coordinator, else the controller backend's own channel (MPI messages,
// which the background thread polls); Gloo always uses TCP.
enum class ControlChannelChoice { kAuto, kTcp, kBackend };

// How hierarchical allreduce's cross-host step moves bytes
// (HVD_HIERARCHICAL_CROSS): a ring on hvd's own TCP sockets, or the
// backend's allreduce (MPI: MpiRingAllreduce; Gloo: its ring). kAuto: TCP
// where every carrier reaches its neighbour, else the backend.
enum class CrossTransport { kAuto, kTcp, kBackend };

// The chunk size for allreduces that stay inside one host (shared memory):
// half the L2 cache, within [256 KiB, 4 MiB]. A chunk that stays in cache
// while it is reduced beats a bigger one, whose reduction waits on memory
// (docs/benchmarks.md); across hosts, per-call latency favours 4 MiB.
int64_t HostLocalChunkBytes();

// The round of an allreduce through host-local shared memory: an eighth of
// the L2 cache, within [64 KiB, 1 MiB]. Between two barriers a member
// touches about three rounds' worth (the last round's results copied out,
// this round's share reduced, the next round copied in); kept within L2,
// the others read its slot from its cache rather than from memory (1 MiB
// rounds ran 1-10% slower on 2 MiB of L2: docs/benchmarks.md). A call that
// fits one slot goes in one round (shm_shared.cc).
int64_t SharedRoundBytes();

// From this many bytes on, an allreduce through host-local shared memory
// writes results that go out of place with streaming stores (StreamCopy):
// sixteen times the L2 cache, within [8 MiB, 64 MiB]. A result that large
// has left the caches before anyone reads it, and a plain store would
// first read each line of it from memory (8-12% out of place on the large
// gradient sets here; nothing on 20 MiB ones: docs/benchmarks.md).
int64_t StreamingStoreBytes();

struct Config {
  int64_t fusion_threshold_bytes = 128LL * 1024 * 1024;  // 0 disables fusion
  double cycle_time_ms = 1.0;
  // Allreduces are split into calls of at most this many bytes (0: never),
  // and tensors of a quarter of it or more run alone instead of being
  // copied into the fusion buffer. Unless set, a job on one host uses
  // HostLocalChunkBytes() instead. See docs/tuning.md.
  int64_t allreduce_chunk_bytes = 4LL * 1024 * 1024;
  bool allreduce_chunk_bytes_fixed = false;  // set by HVD_ALLREDUCE_CHUNK_BYTES
  int cache_capacity = 1024;                 // 0 disables the response cache
  // Unless HVD_CACHE_CAPACITY is set, the cache grows (doubling) when
  // tensors it turned away keep coming back, up to this many slots.
  static constexpr int kCacheCapacityAutoMax = 16384;
  int cache_capacity_max() const {
    return cache_capacity_fixed || cache_capacity == 0
               ? cache_capacity
               : (cache_capacity > kCacheCapacityAutoMax ? cache_capacity : kCacheCapacityAutoMax);
  }
  // How long hvd_wait keeps its core (yielding it to anything runnable)
  // before it sleeps; -1: 1000 us where this host's ranks have a core
  // each, else 0. A core that goes idle on a busy VM host can take
  // milliseconds to be woken (docs/tuning.md).
  int64_t wait_spin_us = -1;
  // Whether hvd_wait, while it keeps its core, steps its set's background
  // loop itself (HVD_WAIT_PROGRESS; core/runtime/loop_progress.h).
  bool wait_progress = true;
  double stall_check_seconds = 60.0;
  double stall_shutdown_seconds = 0.0;  // 0 = never
  bool stall_check_disabled = false;
  // HVD_GLOO_TIMEOUT_SECONDS (Horovod's name): how long a rank waits for its
  // peers, on MPI too: connecting (Gloo's world, the TCP negotiation
  // channel, the cross-host ring), a ring that moves no byte, the negotiated
  // shutdown; on Gloo also each collective and the shared-memory waits.
  double peer_timeout_seconds = 30.0;
  // HVD_GLOO_IFACE and HVD_GLOO_HOSTNAME (Horovod's names): where this
  // rank's sockets listen, on every backend: Gloo's, the TCP negotiation
  // channel's coordinator (also under MPI) and the cross-host ring's.
  std::string listen_iface;     // empty: listen_hostname, else towards the rendezvous store
  std::string listen_hostname;  // empty: the local address that reaches the store
  // Every operation must complete this long after it was submitted, or it
  // fails with HVD_ERR_TIMEOUT naming the ranks it waited for (0: no
  // deadline). 30 minutes, as torch.distributed: long enough for a rank
  // that checkpoints or evaluates while the others wait, short enough that
  // a hung job frees its machines the same hour.
  double op_timeout_seconds = 1800.0;
  // Under MPI a collective that misses its deadline can never be left: the
  // job is aborted (after the operations failed with the reason) unless
  // this is off.
  bool mpi_abort_on_timeout = true;
  // Point-to-point messages (hvd_send_async...) get a communicator of
  // their own at init; off: no communicator, and p2p calls are refused.
  bool p2p = true;
  LogLevel log_level = LogLevel::kWarning;
  bool log_hide_time = false;
  BackendChoice controller = BackendChoice::kAuto;
  BackendChoice cpu_operations = BackendChoice::kAuto;
  std::string timeline_path;  // empty = off
  // The flight recorder (docs/fault-tolerance.md): how many operations each
  // rank remembers (0: off) and where it dumps them. Off by default: on
  // W4 its cost exceeded the 1% allowed for something always on
  // (docs/benchmarks.md).
  int64_t flight_recorder_size = 0;
  std::string flight_recorder_dir = "/tmp";
  bool timeline_mark_cycles = false;
  bool autotune = false;
  std::string autotune_log;
  bool hierarchical_allreduce = false;
  // Allreduces of fewer bytes skip the hierarchy (-1: the backend's own
  // crossover, core/backends/crossovers.h).
  int64_t hierarchical_allreduce_min_bytes = -1;
  bool hierarchical_allgather = false;
  bool mpi_threads_disable = false;
  ControlChannelChoice control_channel = ControlChannelChoice::kAuto;
  CrossTransport hierarchical_cross = CrossTransport::kAuto;
  // HVD_SHARED_MEMORY: Gloo and MPI collectives among ranks of one host
  // through a shared-memory segment (docs/tuning.md); 0 keeps them on the
  // backend.
  bool shared_memory = true;
  // HVD_SHARED_MEMORY_PEER_READS (on unless 0): there, allreduces of 1 MiB
  // or more whose tensors lie in huge pages on every rank may read the
  // other ranks' tensors where they lie (process_vm_readv, where the kernel
  // allows it) instead of going through the segment, when rank 0 of the
  // host times that faster; on 4 KiB pages they never do (docs/tuning.md).
  bool shared_memory_peer_reads = true;
  // HVD_SHARED_MEMORY_MPI_ALLREDUCE=1: on MPI, allreduces of 2 MiB or more
  // through that segment time Open MPI's own allreduce against the segment
  // and take the faster (docs/tuning.md). Off unless set: on the machine
  // measured its tries cost more than it found (docs/benchmarks.md).
  bool shared_memory_mpi_allreduce = false;
  GpuOperations gpu_operations = GpuOperations::kAuto;
  double gpu_timeout_seconds = 600.0;  // a GPU collective's wait; 0: no limit
  bool elastic = false;
  double elastic_timeout_seconds = 600.0;  // waiting for the launcher's next round
  // HVD_ELASTIC_LIVENESS_SECONDS: an elastic worker whose heartbeat (every
  // liveness/5 s, within 0.1-1 s) stops this long is killed by hvdrun; 0: off.
  double elastic_liveness_seconds = 5.0;

  // Rank/size, host, rendezvous store... as the launcher set them.
  LaunchEnv launch;

  // Which fields came from the environment (autotune must not touch them).
  bool fusion_threshold_fixed = false;
  bool cycle_time_fixed = false;
  bool cache_capacity_fixed = false;
  bool hierarchical_allreduce_fixed = false;
  bool hierarchical_allgather_fixed = false;

  // Reads the process environment. Invalid values are an error naming the
  // variable and the value.
  static Status FromEnvironment(Config* out);
};

}  // namespace hvd
