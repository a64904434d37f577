// Host-local collectives through shared memory: a Comm for ranks that are
// all on one host, whose allreduce, reduce-scatter, allgather, broadcast and
// alltoall go through one mapped segment instead of the backend's transport (Gloo:
// loopback TCP, two kernel copies per byte and an event loop per
// connection; MPI: messages through Open MPI's buffers, waited for by
// busy-polling). Every other call stays on the backend's Comm.
//
// The segment holds a cache line per member (its barrier count and pid) and
// three sets of one slot per member, used round after round (a set is
// rewritten only after every member has passed a barrier that follows its
// last read; an allreduce reads one set while it writes the next).
//
// An allreduce given the tensors where they lie (regions, or in and out)
// goes in cache-sized rounds (at most a slot), one barrier each: every
// member copies into its slot the elements the others reduce, reduces its
// own share from its input and the others' slots into its output and its
// slot, and copies the others' results out (shm_shared.cc). Given gather
// and scatter (a prescale), a round copies everything in, a barrier, each
// reduces its share of every slot, a second barrier, everything out. Other
// collectives go in rounds too: each copies its part into its slot, a
// barrier, everyone's parts copied out. A broadcast's round is the root's
// bytes in the whole set; an alltoall's, a part per destination in each
// member's slot.
//
// Where every member's tensors lie in buffers from hvd_alloc_shared
// (shared_buffers.h), an allreduce skips the slots: each member reduces its
// share from every member's input into every member's output, between two
// barriers (shm_mapped.cc).
//
// Large allreduces of regions have a second path, and member 0 times both
// and picks the faster for everyone, trying the other now and then
// (shm_backend.cc, "the path"):
// - from `backend_min_bytes` (on MPI where HVD_SHARED_MEMORY_MPI_ALLREDUCE=1
//   asks for it), the backend's own allreduce on the tensors where they lie;
// - otherwise, where the kernel lets members read each other's memory
//   (peer_memory.h; HVD_SHARED_MEMORY_PEER_READS), from kDirectMinBytes:
//   no slots; each member reduces its share straight from the others'
//   inputs and reads their results from their outputs (shm_direct.cc), as
//   Open MPI does on one host, without its messages; only where every
//   member's tensors lie in huge pages (huge_pages.h): on 4 KiB pages the
//   kernel's pinning makes it the slower path, and timing it costs more
//   than it finds.
//
// No hang: a barrier waits at most `timeout_s` (then HVD_ERR_TIMEOUT naming
// the member waited for); a member whose process is gone fails it at once
// (HVD_ERR_PEER_LOST); Abort() (another thread) fails it at once. After a
// failure the members are out of step: every later call fails too.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backends/forwarding_comm.h"
#include "core/dataplane/decorators/huge_pages.h"
#include "core/dataplane/decorators/shared_buffers.h"
#include "core/dataplane/decorators/shm_segment.h"
#include "core/dataplane/decorators/store_chooser.h"

namespace hvd {

class ShmComm : public ForwardingComm {
 public:
  // Collective over `backend` (whose ranks are on this host): the segment's
  // name and every member's verdict travel over it. Every member returns the
  // same verdict; *out stays null where shared memory cannot be used (the
  // reason in *why), so all can keep the backend together.
  // `peer_reads`: try reading the others' memory (every member agrees on
  // the outcome; peer_reads() says it).
  // `backend_min_bytes`: allreduces of regions from this size may take the
  // backend's allreduce (-1: never; the smallest over the members counts).
  static Status Create(std::shared_ptr<Comm> backend, double timeout_s, int64_t slot_bytes,
                       bool peer_reads, int64_t backend_min_bytes, std::unique_ptr<ShmComm>* out,
                       std::string* why);
  static constexpr int64_t kDefaultSlotBytes = 1 << 20;
  static constexpr int kSets = 3;
  // Below this, a slot round costs less than the direct path's system calls
  // and its barrier at the end.
  static constexpr int64_t kDirectMinBytes = 1 << 20;
  // On MPI, from this size an allreduce chooses between the slots and MPI's
  // own: below it a call is mostly latency, and the slots' one barrier per
  // round beats MPI's messages.
  static constexpr int64_t kBackendMinBytes = 2 << 20;
  // The backend's allreduce goes in pieces of this size, the same on every
  // member whatever its tensors' layout (a piece across tensors is staged).
  static constexpr int64_t kBackendPieceBytes = 4 << 20;
  // The direct path's share of a window per member: its reads of a peer go
  // in pieces this large (the kernel pins each page it reads; fewer, larger
  // reads cost less), and its reduce stays in L2.
  static constexpr int64_t kShareBytes = 1 << 20;
  // The direct path's tensors lie in huge pages when at most this share of
  // their bytes lies outside whole huge pages (numpy's arrays are not
  // aligned to them: a head and a tail in small pages).
  static constexpr int64_t kLooseShare = 4;  // a quarter
  // Calls between tries of the path not in use: at first, and at most. A
  // try of the slower path costs up to 2x a call; a change of state shows
  // at once as a call much slower than its path's figure (StoreChooser's
  // surprise), so tries can be rare.
  static constexpr uint64_t kPathExplore = 32, kPathMaxExplore = 256;
  // Timings of each path (and each placement, below), in turn, before the
  // first choice: one can be cold, or caught in a moment of the other
  // members' noise.
  static constexpr int kPathSamples = 2;

  ShmComm(std::shared_ptr<Comm> backend, std::unique_ptr<ShmSegment> segment, int64_t slot_bytes,
          int64_t round_bytes, double timeout_s, bool check_pids, int64_t backend_min_bytes);

  // Whether allreduces of regions from kDirectMinBytes may take the direct
  // path (every member can read the others' memory).
  bool peer_reads() const { return peer_reads_; }
  // How every member writes what the others read, per collective: member
  // 0's figures, and this member's large calls that streamed (tests check
  // both ways ran, and that every member followed member 0).
  enum StoreKind {
    kAllreduceStores,
    kReducescatterStores,
    kAllgatherStores,
    kBroadcastStores,
    kAlltoallStores,
    kStoreKinds
  };
  const StoreChooser& stores(StoreKind kind = kAllreduceStores) const {
    return stores_[kind].chooser();
  }
  int64_t streamed_calls(StoreKind kind = kAllreduceStores) const {
    return stores_[kind].streamed();
  }
  // Allreduces that went between shared buffers (shm_mapped.cc).
  int64_t mapped_calls() const { return mapped_calls_; }
  // Allreduces that went through the backend's own (shm_backend.cc) or the
  // direct path (shm_direct.cc), and member 0's figures for the two paths
  // (way 1: the backend's or the direct one).
  int64_t backend_calls() const { return backend_calls_; }
  int64_t peer_read_calls() const { return peer_read_calls_; }
  const StoreChooser& path() const { return path_; }
  // Tests: every allreduce that may take the second path takes it (or the
  // slots: false), untimed, wherever its tensors lie; member 0's way counts.
  void ForcePath(bool other) { forced_ = other ? 1 : 0; }
  // Allreduces of regions in rounds smaller than a slot place their rounds
  // as member 0 finds faster (shm_shared.cc, "placement"): its figures
  // (way 1: the slots' parts in turn), and the calls that took them in turn.
  const StoreChooser& placement() const { return placement_; }
  int64_t turns_calls() const { return turns_calls_; }
  // Member 0's large calls that tried both a placement and the stores not
  // in use, so that neither could be timed (none should).
  int64_t both_tried_calls() const { return both_tried_calls_; }
  // Member 0's calls through the slots whose time its path chooser took
  // while they tried the stores or a placement (none should).
  int64_t path_timed_tries() const { return path_timed_tries_; }

  // Elements [lo, lo + n) of `count` that member r reduces.
  struct Share {
    int64_t lo, n;
  };
  static Share ShareOf(int64_t count, int size, int r);

  // Rounds of one slot: no need to fuse for the transport's sake. Takes the
  // tensors where they lie at every size (regions); gathers where a
  // prescale needs it: each round's input is gathered straight into my
  // slot, and its result scattered straight out of the slots.
  CommCaps caps() const override {
    CommCaps c;
    c.gathers = true;
    c.direct_min_bytes = 0;
    return c;
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dt,
                       ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes) override;
  Status Broadcast(void* buf, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  void Abort() override;

 protected:
  Status DoAllreduce(const AllreduceOptions& args) override;

 private:
  struct alignas(64) Member {
    uint64_t arrived;  // barriers passed (read and written with __atomic builtins)
    uint32_t seq;      // arrived's low half: the futex word its waiters sleep on
    uint32_t waiters;  // members asleep on seq (the arrival wakes them only then)
    int32_t pid;
    // Rounds an alltoall needs for this member's own sends and receives, by
    // the parity of the call's first round (the others read it after that
    // round's barrier; the next call writes the other one).
    int64_t rounds[2];
    // An allreduce of regions: the call's element count and, where the
    // direct path may be taken, where this member's table of regions lies
    // (in its own address space) and their number, by the parity of the
    // call (a member may publish the next call's while another still reads
    // this one's).
    uint64_t direct_table[2];
    int64_t direct_regions[2], direct_count[2];
    // The allreduce of shared buffers (shm_mapped.cc), by the call's parity:
    // the entries of this member's table in its slot (-1: its tensors are
    // not all in shared buffers), and whether it could not map a peer's.
    int64_t mapped[2];
    int32_t mapped_failed[2];
    uint64_t frees;  // SharedBuffers::Frees() of this member's process
    // Member 0's path for the allreduce of regions of this parity, written
    // before its first barrier (1: the backend's allreduce or the direct one),
    // and whether this member's tensors may take the second path (the
    // direct one: they lie in huge pages).
    int32_t backend[2];
    int32_t open[2];
    // Member 0's placement for the coming allreduces of regions in rounds
    // smaller than a slot (1: the parts in turn), written before a large
    // call's last barrier and read by every member after it.
    int32_t turns;
    // Member 0's stores for each collective's next call (1: streaming), by
    // the parity of the call (AgreedStores).
    int32_t stores[kStoreKinds][2];
  };
  static_assert(sizeof(Member) % 64 == 0, "whole cache lines per member");
  Member& member(int r) const;
  uint8_t* slot(int64_t round, int r) const;
  // The same for rounds of `round_bytes` (at most a slot) that take the
  // round-sized parts of the set's slots in turn.
  uint8_t* slot(int64_t round, int r, int64_t round_bytes) const;
  Status Guard(const Status& s);
  Status Unusable() const;
  Status Barrier();
  Status Barrier(StoreTimer* timer);  // the first one's wait left out of timer's call
  // `bytes` from `from` into my slot at `d`, for the others to read.
  static void ToSlot(bool stream, uint8_t* d, const void* from, int64_t bytes);
  Status WaitFor(int r, uint64_t target);
  Status SleepUntil(int r, uint64_t target, std::chrono::steady_clock::time_point start);
  Status RunRounds(int64_t count, DataType dt, ReduceOp op, const Gather& gather,
                   const Scatter& scatter);
  Status RunShared(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                   ReduceOp op, double post);
  struct SharedCall;  // shm_shared.cc
  Status CheckCounts(int64_t parity, int64_t count);
  void SharedCopyIn(const SharedCall& c, int64_t k);
  void SharedReduce(const SharedCall& c, int64_t k);
  void SharedCopyOut(const SharedCall& c, int64_t k);
  void ChooseTurns(int64_t bytes, std::chrono::steady_clock::time_point start, bool timed);
  struct MappedEntry;  // shm_mapped.cc
  int64_t PublishMapped(const std::vector<DirectRegion>& regions, int64_t es, int64_t parity);
  Status RunMapped(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                   ReduceOp op, double post, bool stream, int64_t parity);
  Status MapTables(int64_t es, int64_t parity);
  // shm_backend.cc: the second path is the backend's where it was asked
  // for, else the direct one where the members can read each other;
  // whether a call of `bytes` may take it.
  bool OtherIsBackend() const { return backend_min_bytes_ >= 0; }
  bool OtherEligible(int64_t bytes) const {
    if (OtherIsBackend()) return bytes >= backend_min_bytes_;
    return peer_reads_ && bytes >= kDirectMinBytes;
  }
  // Before the call's first barrier: whether my tensors may take the
  // second path (published for the others); not where they are all in
  // shared buffers (`mapped`: the mapped path or the slots).
  bool OpenHere(const std::vector<DirectRegion>& regions, int64_t es, int64_t bytes, int64_t parity,
                bool mapped);
  // After it: whether every member's may (the same answer on every member;
  // never where any member's are all in shared buffers).
  bool OpenEverywhere(int64_t parity) const;
  StoreChooser::Choice ChoosePath(int64_t bytes, int64_t parity, bool open);
  bool RecordPath(StoreChooser::Choice way, bool other, bool timed, int64_t bytes,
                  std::chrono::steady_clock::time_point start);
  bool OtherChosen(int64_t parity) const;
  struct BackendCall;
  Status RunBackend(const std::vector<DirectRegion>& regions, const std::vector<int64_t>& starts,
                    int64_t count, DataType dt, ReduceOp op, double post);
  Status BackendPiece(const void* in, void* out, int64_t n, const BackendCall& c);
  Status ProbePeerReads(bool can);
  // shm_direct.cc
  bool InHugePages(const std::vector<DirectRegion>& regions, int64_t es) const;
  void PublishTable(const std::vector<DirectRegion>& regions, int64_t parity);
  Status RunDirect(const std::vector<DirectRegion>& regions, const std::vector<int64_t>& starts,
                   int64_t count, DataType dt, ReduceOp op, double post, int64_t parity);
  Status ReadTables(int64_t count, int64_t parity, std::vector<std::vector<int64_t>>* starts);
  Status ReduceOthers(const std::vector<std::vector<int64_t>>& starts, int64_t at0, int64_t m,
                      DataType dt, ReduceOp op);
  void FinishPiece(const std::vector<DirectRegion>& regions, const std::vector<int64_t>& starts,
                   int64_t at0, int64_t m, DataType dt, ReduceOp op, double post);
  // Reads what iov_remote_ lists in member r into what iov_local_ lists.
  Status ReadFrom(int r);

  std::unique_ptr<ShmSegment> segment_;
  int64_t slot_bytes_;
  int64_t round_bytes_;  // an allreduce's round: cache-sized, at most a slot
  double timeout_s_;
  bool check_pids_;                   // peers' pids are visible here (one pid namespace)
  AgreedStores stores_[kStoreKinds];  // how slot data is written
  std::vector<uint8_t> block_;        // a reduced block on its way to a streamed slot
  std::chrono::nanoseconds spin_;     // how long a barrier spins before it sleeps
  uint64_t passed_ = 0;
  int64_t round_ = 0;
  int64_t region_calls_ = 0;  // allreduces of regions: their parity
  int64_t mapped_calls_ = 0;
  int64_t backend_min_bytes_;  // -1: the slots only
  StoreChooser path_;          // member 0's: slots or the second path
  // path_ before it chose a call that may turn out not open everywhere
  // (the others' answers come after the choice): put back if so.
  std::optional<StoreChooser> unchosen_;
  int64_t backend_calls_ = 0;
  int64_t peer_read_calls_ = 0;
  int forced_ = -1;                    // ForcePath's way (-1: none)
  std::vector<uint8_t> staged_;        // a backend piece across tensors
  StoreChooser placement_;             // member 0's: one part per set, or the parts in turn
  StoreChooser::Choice turns_choice_;  // member 0's: what turns_ came from
  bool turns_ = false;                 // this member's placement for the next large call
  int64_t turns_calls_ = 0;
  int64_t both_tried_calls_ = 0;
  int64_t path_timed_tries_ = 0;
  std::atomic<bool> aborted_{false};
  Status failed_;
  bool peer_reads_ = false;
  // The direct allreduce's working memory: the others' tables, my share of
  // a window being reduced, and a further peer's input read for it.
  std::vector<std::vector<DirectRegion>> tables_;
  std::vector<uint8_t> acc_, piece_;
  std::vector<iovec> iov_local_, iov_remote_;
  HugePages huge_pages_;
  // The allreduce of shared buffers: the peers' buffers mapped here, every
  // member's table with addresses here, and each peer's frees last seen.
  PeerBuffers peer_buffers_;
  std::vector<std::vector<DirectRegion>> views_;
  std::vector<std::vector<int64_t>> view_starts_;
  std::vector<uint64_t> seen_frees_;
};

}  // namespace hvd
