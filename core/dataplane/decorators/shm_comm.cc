#include "core/dataplane/decorators/shm_comm.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/backends/tcp/tcp_link.h"
#include "core/common/config.h"
#include "core/common/futex.h"
#include "core/common/reduce.h"
#include "core/common/spin_lock.h"
#include "core/common/stream_copy.h"
#include "core/common/traffic.h"

namespace hvd {
namespace {

constexpr const char* kWhat = "host-local shared memory";

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : bytes) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

int64_t Clamp(int64_t v, int64_t hi) {
  return std::max<int64_t>(0, std::min(v, hi));
}

// Creates (member 0) or opens the segment; *name is "" where member 0 failed.
Status MapSegment(Comm& c, size_t bytes, ShmSegment* seg) {
  std::string name;
  Status s;
  if (c.rank() == 0) {
    name = "/hvd-" + Hex(RandomToken(8));
    s = seg->Create(name, bytes);
    if (!s.ok()) name.clear();
  }
  HVD_RETURN_IF_ERROR(BroadcastBytes(c, &name, 0));
  if (c.rank() != 0) {
    s = name.empty() ? Status::Backend("member 0 could not create the segment")
                     : seg->Open(name, bytes);
  }
  return s;
}

// A barrier spins this long before it sleeps: long enough to cover the
// others' copy of a slot when every member can have a core of its own;
// hardly at all when members outnumber the cores, where a spin only delays
// the member it waits for.
std::chrono::nanoseconds SpinBudget(int members) {
  return RanksFitCores(members) ? std::chrono::microseconds(100) : std::chrono::microseconds(2);
}

}  // namespace

ShmComm::Share ShmComm::ShareOf(int64_t count, int size, int r) {
  const int64_t base = count / size, extra = count % size;
  return {r * base + std::min<int64_t>(r, extra), base + (r < extra ? 1 : 0)};
}

Status ShmComm::Create(std::shared_ptr<Comm> backend, double timeout_s, int64_t slot_bytes,
                       bool peer_reads, int64_t backend_min_bytes, std::unique_ptr<ShmComm>* out,
                       std::string* why) {
  Comm& c = *backend;
  const int size = c.size();
  slot_bytes = std::max<int64_t>(64 * size, slot_bytes / 64 * 64);
  const size_t bytes = size * sizeof(Member) + kSets * static_cast<size_t>(size * slot_bytes);
  auto seg = std::make_unique<ShmSegment>();
  const Status s = MapSegment(c, bytes, seg.get());
  if (s.ok()) reinterpret_cast<Member*>(seg->data())[c.rank()].pid = ::getpid();
  // Every member must cut an allreduce into the same rounds, whatever its
  // own core's cache says (hybrid CPUs): the smallest round wins.
  const int64_t round =
      std::min(slot_bytes, std::max<int64_t>(64 * size, SharedRoundBytes() / 64 * 64));
  // A member that never takes the backend's path (-1), or never reads its
  // peers, rules it out for all: every member must take the same path in
  // every call.
  int64_t agreed[4] = {s.ok() ? 1 : 0, round, backend_min_bytes, peer_reads ? 1 : 0};
  HVD_RETURN_IF_ERROR(c.Allreduce({agreed, 4, DataType::kInt64, ReduceOp::kMin}));
  seg->Unlink();  // everyone who could has mapped it (no-op where not the creator)
  if (!agreed[0]) {
    *why = s.ok() ? "another member of the host could not map the segment" : s.message();
    return Status::OK();
  }
  HVD_RETURN_IF_ERROR(c.Barrier());  // every pid is written
  // A member in another pid namespace (a container) is invisible here:
  // liveness then rests on the timeout alone.
  bool pids = true;
  for (int r = 0; r < size; ++r) {
    const int32_t pid = reinterpret_cast<Member*>(seg->data())[r].pid;
    pids = pids && pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
  }
  *out = std::make_unique<ShmComm>(std::move(backend), std::move(seg), slot_bytes, agreed[1],
                                   timeout_s, pids, agreed[2]);
  // Reading a peer needs its pid: not across pid namespaces.
  if (agreed[3] == 1) HVD_RETURN_IF_ERROR((*out)->ProbePeerReads(pids));
  return Status::OK();
}

ShmComm::ShmComm(std::shared_ptr<Comm> backend, std::unique_ptr<ShmSegment> segment,
                 int64_t slot_bytes, int64_t round_bytes, double timeout_s, bool check_pids,
                 int64_t backend_min_bytes)
    : ForwardingComm(std::move(backend)),
      segment_(std::move(segment)),
      slot_bytes_(slot_bytes),
      round_bytes_(round_bytes),
      timeout_s_(timeout_s),
      check_pids_(check_pids),
      spin_(SpinBudget(size())),
      backend_min_bytes_(backend_min_bytes),
      path_(1, kPathExplore, kPathMaxExplore, kPathSamples),  // OtherEligible decides
      placement_(slot_bytes + 1, StoreChooser::kExplore, StoreChooser::kMaxExplore, kPathSamples) {
  for (int k = 0; k < kStoreKinds; ++k) {
    stores_[k] = AgreedStores(StoreChooser(StoreChooser::kMinBytes, StoreChooser::kExplore,
                                           StoreChooser::kMaxExplore, kPathSamples));
    stores_[k].Attach(member(0).stores[k], rank() == 0);
  }
}

ShmComm::Member& ShmComm::member(int r) const {
  return reinterpret_cast<Member*>(segment_->data())[r];
}

uint8_t* ShmComm::slot(int64_t round, int r) const {
  const int64_t set = round % kSets;
  return segment_->data() + size() * sizeof(Member) + (set * size() + r) * slot_bytes_;
}

uint8_t* ShmComm::slot(int64_t round, int r, int64_t round_bytes) const {
  const int64_t parts = slot_bytes_ / round_bytes;
  return slot(round, r) + (round / kSets) % parts * round_bytes;
}

void ShmComm::Abort() {
  aborted_.store(true);
  ForwardingComm::Abort();
}

Status ShmComm::Guard(const Status& s) {
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

Status ShmComm::Unusable() const {
  return Status(failed_.code(), std::string(kWhat) + ": unusable since an earlier call failed: " +
                                    failed_.message());
}

// Arrival publishes the count, then wakes the members asleep on it. The
// seq_cst pair (seq here, waiters in SleepUntil) means either this sees a
// sleeper or the sleeper sees the new count before it sleeps.
Status ShmComm::Barrier() {
  ++passed_;
  Member& me = member(rank());
  __atomic_store_n(&me.arrived, passed_, __ATOMIC_RELEASE);
  __atomic_store_n(&me.seq, static_cast<uint32_t>(passed_), __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&me.waiters, __ATOMIC_SEQ_CST) > 0) FutexWakeAll(&me.seq);
  for (int r = 0; r < size(); ++r) {
    if (r != rank()) HVD_RETURN_IF_ERROR(WaitFor(r, passed_));
  }
  return Status::OK();
}

Status ShmComm::Barrier(StoreTimer* timer) {
  timer->Waiting();
  const Status s = Barrier();
  timer->Waited();
  return s;
}

void ShmComm::ToSlot(bool stream, uint8_t* d, const void* from, int64_t bytes) {
  if (stream) return StreamCopy(d, from, static_cast<size_t>(bytes));
  std::memcpy(d, from, static_cast<size_t>(bytes));
}

// Spins while the others are likely a copy away, then sleeps until the
// member arrives. Never sched_yield: where other work shares the core, a
// yield hands it the core for a whole time slice, and every barrier of a
// large allreduce pays that (docs/benchmarks.md, "Speed in every launch").
Status ShmComm::WaitFor(int r, uint64_t target) {
  const uint64_t* arrived = &member(r).arrived;
  if (__atomic_load_n(arrived, __ATOMIC_ACQUIRE) >= target) return Status::OK();
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + spin_;
  do {
    for (int i = 0; i < 64; ++i) {
      if (__atomic_load_n(arrived, __ATOMIC_ACQUIRE) >= target) return Status::OK();
      CpuRelax();
    }
  } while (std::chrono::steady_clock::now() < spin_until);
  uint32_t* waiters = &member(r).waiters;
  __atomic_add_fetch(waiters, 1, __ATOMIC_SEQ_CST);
  const Status s = SleepUntil(r, target, start);
  __atomic_sub_fetch(waiters, 1, __ATOMIC_SEQ_CST);
  return s;
}

// Asleep on the member's futex word in slices; between slices it checks
// Abort, the member's process and the deadline, and progresses this rank's
// transport (the others may wait for a message only it can deliver:
// Comm::Progress).
Status ShmComm::SleepUntil(int r, uint64_t target, std::chrono::steady_clock::time_point start) {
  constexpr int64_t kSliceNs = 1000000;
  Member& m = member(r);
  for (;;) {
    const uint32_t seen = __atomic_load_n(&m.seq, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&m.arrived, __ATOMIC_SEQ_CST) >= target) return Status::OK();
    if (aborted_.load(std::memory_order_relaxed)) {
      return Status::Backend(std::string(kWhat) + ": aborted");
    }
    inner().Progress();
    if (check_pids_ && ::kill(m.pid, 0) != 0 && errno == ESRCH) {
      return Status::PeerLost(std::string(kWhat) + ": the process of member " + std::to_string(r) +
                              " of this host's group (pid " + std::to_string(m.pid) + ") is gone");
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s_ > 0 && waited > timeout_s_) {
      return Status::Timeout(std::string(kWhat) + ": member " + std::to_string(r) +
                             " of this host's group did not arrive within " +
                             std::to_string(timeout_s_) + " s");
    }
    FutexWait(&m.seq, seen, kSliceNs);
  }
}

Status ShmComm::DoAllreduce(const AllreduceOptions& a) {
  if (!failed_.ok()) return Unusable();
  if (a.gathered()) return Guard(RunRounds(a.count, a.dt, a.op, a.gather, a.scatter));
  if (a.regions) return Guard(RunShared(*a.regions, a.count, a.dt, a.op, a.post));
  const std::vector<DirectRegion> one{
      {reinterpret_cast<uint64_t>(a.in), reinterpret_cast<uint64_t>(a.out), a.count}};
  return Guard(RunShared(one, a.count, a.dt, a.op, 1.0));
}

// Per round: my part gathered into my slot; barrier; my share reduced over
// every slot, in my slot; barrier; every share scattered out.
Status ShmComm::RunRounds(int64_t count, DataType dt, ReduceOp op, const Gather& gather,
                          const Scatter& scatter) {
  const int64_t es = static_cast<int64_t>(DataTypeSize(dt));
  const int64_t piece = round_bytes_ / es;
  for (int64_t off = 0; off < count; off += piece, ++round_) {
    const int64_t n = std::min(piece, count - off);
    HVD_RETURN_IF_ERROR(gather(off, n, slot(round_, rank())));
    HVD_RETURN_IF_ERROR(Barrier());
    const Share mine = ShareOf(n, size(), rank());
    uint8_t* acc = slot(round_, rank()) + mine.lo * es;
    for (int r = 0; r < size() && mine.n > 0; ++r) {
      if (r != rank()) ReduceInto(acc, slot(round_, r) + mine.lo * es, mine.n, dt, op);
    }
    CountMoved(3 * (size() - 1) * mine.n * es);  // acc and a slot read, acc written, per other
    HVD_RETURN_IF_ERROR(Barrier());
    for (int r = 0; r < size(); ++r) {
      const Share s = ShareOf(n, size(), r);
      if (s.n > 0) HVD_RETURN_IF_ERROR(scatter(off + s.lo, s.n, slot(round_, r) + s.lo * es));
    }
  }
  return Status::OK();
}

// Per round: the next q elements of every member's block into my slot (q
// per block); barrier; my block's q reduced over every slot into `out`.
Status ShmComm::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                              DataType dt, ReduceOp op) {
  if (!failed_.ok()) return Unusable();
  const int64_t es = static_cast<int64_t>(DataTypeSize(dt));
  const int64_t q = std::max<int64_t>(1, slot_bytes_ / es / size());
  std::vector<int64_t> start(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) start[k + 1] = start[k] + counts[k];
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  StoreTimer timer(&stores_[kReducescatterStores], start.back() * es);
  for (int64_t done = 0; done < longest; done += q, ++round_) {
    for (int k = 0; k < size(); ++k) {
      ToSlot(timer.stream(), slot(round_, rank()) + k * q * es, src + (start[k] + done) * es,
             Clamp(counts[k] - done, q) * es);
    }
    HVD_RETURN_IF_ERROR(Guard(Barrier(&timer)));
    const int64_t n = Clamp(counts[rank()] - done, q);
    if (n == 0) continue;
    const int64_t at = rank() * q * es;
    std::memcpy(dst + done * es, slot(round_, rank()) + at, static_cast<size_t>(n * es));
    for (int r = 0; r < size(); ++r) {
      if (r != rank()) ReduceInto(dst + done * es, slot(round_, r) + at, n, dt, op);
    }
  }
  timer.Done();
  return Status::OK();
}

// Per round: the next slot of my bytes into my slot; barrier; everyone's
// copied out.
Status ShmComm::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes) {
  if (!failed_.ok()) return Unusable();
  std::vector<int64_t> start(bytes.size() + 1, 0);
  for (size_t k = 0; k < bytes.size(); ++k) start[k + 1] = start[k] + bytes[k];
  const int64_t longest = *std::max_element(bytes.begin(), bytes.end());
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  StoreTimer timer(&stores_[kAllgatherStores], start.back());
  for (int64_t done = 0; done < longest; done += slot_bytes_, ++round_) {
    ToSlot(timer.stream(), slot(round_, rank()), src + done,
           Clamp(bytes[rank()] - done, slot_bytes_));
    HVD_RETURN_IF_ERROR(Guard(Barrier(&timer)));
    for (int k = 0; k < size(); ++k) {
      std::memmove(dst + start[k] + done, slot(round_, k),
                   static_cast<size_t>(Clamp(bytes[k] - done, slot_bytes_)));
    }
  }
  timer.Done();
  return Status::OK();
}

// Per round: the root's next bytes into the whole set of slots (one slot
// per member, contiguous); barrier; copied out by the others.
Status ShmComm::Broadcast(void* buf, int64_t bytes, int root) {
  if (root < 0 || root >= size()) {
    return Status::Invalid(std::string(kWhat) + ": broadcast root " + std::to_string(root) +
                           " is not a member of " + std::to_string(size()));
  }
  if (!failed_.ok()) return Unusable();
  const int64_t piece = size() * slot_bytes_;
  auto* p = static_cast<uint8_t*>(buf);
  // Only the root writes; every member times the call.
  StoreTimer timer(&stores_[kBroadcastStores], bytes);
  for (int64_t done = 0; done < bytes; done += piece, ++round_) {
    const int64_t n = Clamp(bytes - done, piece);
    if (rank() == root) ToSlot(timer.stream(), slot(round_, 0), p + done, n);
    HVD_RETURN_IF_ERROR(Guard(Barrier(&timer)));
    if (rank() != root) std::memcpy(p + done, slot(round_, 0), static_cast<size_t>(n));
  }
  timer.Done();
  return Status::OK();
}

// Per round: the next q bytes for each member into my slot, member j's part
// at j * q; barrier; my part of every member's slot copied out. The members
// agree on the number of rounds (each knows only its own sends and
// receives) through Member::rounds, read after the first round's barrier.
Status ShmComm::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                          const std::vector<int64_t>& recv_bytes) {
  if (!failed_.ok()) return Unusable();
  const int64_t q = slot_bytes_ / size();
  std::vector<int64_t> send_at(send_bytes.size() + 1, 0), recv_at(recv_bytes.size() + 1, 0);
  int64_t longest = 0;
  for (int k = 0; k < size(); ++k) {
    send_at[k + 1] = send_at[k] + send_bytes[k];
    recv_at[k + 1] = recv_at[k] + recv_bytes[k];
    longest = std::max({longest, send_bytes[k], recv_bytes[k]});
  }
  const int64_t parity = round_ % 2;
  int64_t rounds = std::max<int64_t>(1, (longest + q - 1) / q);
  __atomic_store_n(&member(rank()).rounds[parity], rounds, __ATOMIC_RELAXED);
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  StoreTimer timer(&stores_[kAlltoallStores], send_at.back());
  for (int64_t k = 0, done = 0; k < rounds; ++k, done += q, ++round_) {
    for (int j = 0; j < size(); ++j) {
      ToSlot(timer.stream(), slot(round_, rank()) + j * q, src + send_at[j] + done,
             Clamp(send_bytes[j] - done, q));
    }
    HVD_RETURN_IF_ERROR(Guard(Barrier(&timer)));
    if (k == 0) {
      for (int r = 0; r < size(); ++r) {
        rounds = std::max(rounds, __atomic_load_n(&member(r).rounds[parity], __ATOMIC_RELAXED));
      }
    }
    for (int r = 0; r < size(); ++r) {
      std::memcpy(dst + recv_at[r] + done, slot(round_, r) + rank() * q,
                  static_cast<size_t>(Clamp(recv_bytes[r] - done, q)));
    }
  }
  timer.Done();
  return Status::OK();
}

}  // namespace hvd
