// C-ABI abuse test: thousands of random invalid calls from several threads
// at once, before init, while valid collectives run, and after shutdown.
// Every invalid call must come back with an error code (never crash, hang
// or succeed), and the valid collectives in between must still produce
// exact results. Runs under mpirun or hvdrun with 2 ranks: only the valid
// collectives communicate, and both ranks run the same number of them, so
// the ranks stay in step whatever the invalid calls do.
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 10;

std::atomic<int> g_failures{0};
std::atomic<long> g_calls{0};

void Fail(const std::string& what) {
  if (g_failures.fetch_add(1) < 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
}

// A tensor whose fields the abuse cases overwrite one at a time.
struct Tensor {
  Tensor() {
    dl.data = data;
    dl.device = {kDLCPU, 0};
    dl.ndim = 1;
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape;
    dl.strides = nullptr;
    dl.byte_offset = 0;
  }
  float data[16] = {0};
  int64_t shape[4] = {4, 1, 1, 1};
  int64_t strides[4] = {1, 1, 1, 1};
  DLTensor dl{};
};

// Handles that were valid once and are released now (stale).
std::mutex g_stale_mu;
std::vector<hvd_handle> g_stale;

hvd_handle PickHandle(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: {
      std::lock_guard<std::mutex> l(g_stale_mu);
      if (!g_stale.empty()) return g_stale[rng() % g_stale.size()];
      return -1;
    }
    case 1:
      return -static_cast<hvd_handle>(rng() % 1000) - 1;
    case 2:
      return static_cast<hvd_handle>(rng() | (uint64_t{1} << 62));  // never issued
    default:
      return 0;
  }
}

// Breaks one field of `t` in a way the C API can detect.
void Corrupt(Tensor* t, std::mt19937_64& rng) {
  DLTensor& d = t->dl;
  switch (rng() % 12) {
    case 0:
      d.ndim = -1 - static_cast<int>(rng() % 5);
      break;
    case 1:
      d.ndim = 33 + static_cast<int>(rng() % 100);
      break;
    case 2:
      d.shape = nullptr;
      break;
    case 3:
      t->shape[0] = -1 - static_cast<int64_t>(rng() % 1000);
      break;
    case 4:  // 2^40 * 2^40 elements overflows any size computation
      d.ndim = 2;
      t->shape[0] = int64_t{1} << 40;
      t->shape[1] = int64_t{1} << 40;
      break;
    case 5:
      d.dtype = {kDLComplex, 64, 1};
      break;
    case 6:
      d.dtype = {kDLFloat, 24, 1};
      break;
    case 7:
      d.dtype = {kDLFloat, 32, 4};
      break;  // vector lanes
    case 8:
      d.dtype.code = static_cast<uint8_t>(100 + rng() % 100);
      break;
    case 9:
      d.device = {static_cast<DLDeviceType>(77 + rng() % 10), 0};
      break;
    case 10:
      d.data = nullptr;
      break;
    default:  // non-contiguous
      d.ndim = 2;
      t->shape[0] = 2;
      t->shape[1] = 2;
      t->strides[0] = 1;
      t->strides[1] = 2;
      d.strides = t->strides;
      break;
  }
}

// Options broken in a detectable way (or valid options when `valid`).
hvd_op_options BadOptions(std::mt19937_64& rng) {
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  switch (rng() % 6) {
    case 0:
      o.struct_size = rng() % sizeof(size_t);
      break;
    case 1:
      o.struct_size = sizeof(hvd_op_options) + 1 + rng() % 64;
      break;
    case 2:
      o.prescale_factor = NAN;
      break;
    case 3:
      o.postscale_factor = INFINITY;
      break;
    case 4:
      o.process_set = -1 - static_cast<int32_t>(rng() % 100);
      break;
    default:
      o.process_set = 1000 + static_cast<int32_t>(rng() % 100000);
      break;  // unknown set
  }
  return o;
}

// One invalid call; returns its status (and a description for failures).
hvd_status OneInvalidCall(std::mt19937_64& rng, std::string* what, int size) {
  Tensor t, out;
  hvd_handle h = 0;
  hvd_op_options good = HVD_OP_OPTIONS_INIT;
  hvd_op_options bad = BadOptions(rng);
  const int kind = static_cast<int>(rng() % 26);
  *what = "case " + std::to_string(kind);
  switch (kind) {
    case 0:
      Corrupt(&t, rng);
      return hvd_allreduce_async("ab", &t.dl, &out.dl, HVD_OP_SUM, &good, &h);
    case 1:
      return hvd_allreduce_async("ab", nullptr, &out.dl, HVD_OP_SUM, nullptr, &h);
    case 2:
      return hvd_allreduce_async("ab", &t.dl, nullptr, HVD_OP_SUM, nullptr, &h);
    case 3:
      return hvd_allreduce_async("ab", &t.dl, &out.dl, HVD_OP_SUM, nullptr, nullptr);
    case 4:
      return hvd_allreduce_async(
          "ab", &t.dl, &out.dl,
          static_cast<hvd_reduce_op>(rng() % 2 ? -1 - int(rng() % 9)
                                               : HVD_OP_ADASUM + 1 + int(rng() % 99)),
          nullptr, &h);
    case 5:
      return hvd_allreduce_async("ab", &t.dl, &out.dl, HVD_OP_SUM, &bad, &h);
    case 6:
      Corrupt(&t, rng);
      return hvd_allgather_async("ab", &t.dl, &good, &h);
    case 7:
      return hvd_allgather_async("ab", &t.dl, &bad, &h);
    case 8: {
      const int roots[] = {-1, size, size + 1, INT_MAX, INT_MIN};
      return hvd_broadcast_async("ab", &t.dl, roots[rng() % 5], nullptr, &h);
    }
    case 9:
      Corrupt(&t, rng);
      return hvd_broadcast_async("ab", &t.dl, 0, nullptr, &h);
    case 10: {  // splits: wrong count, negative, or not summing to dim 0
      int32_t splits[4] = {1, 1, 1, 1};
      int n = size;
      switch (rng() % 3) {
        case 0:
          n = size + 1 + static_cast<int>(rng() % 3);
          break;
        case 1:
          splits[rng() % size] = -1;
          break;
        default:
          splits[0] = 100;
          break;
      }
      return hvd_alltoall_async("ab", &t.dl, splits, n, nullptr, &h);
    }
    case 11:
      Corrupt(&t, rng);
      return hvd_alltoall_async("ab", &t.dl, nullptr, 0, nullptr, &h);
    case 12:
      return hvd_reducescatter_async("ab", &t.dl, HVD_OP_MIN, nullptr, &h);
    case 13:
      Corrupt(&t, rng);
      return hvd_reducescatter_async("ab", &t.dl, HVD_OP_SUM, nullptr, &h);
    case 14: {
      const DLTensor* ins[2] = {&t.dl, nullptr};
      DLTensor* outs[2] = {&out.dl, &out.dl};
      const int counts[] = {-1, 2, INT_MIN};
      const int c = counts[rng() % 3];
      return hvd_grouped_allreduce_async(nullptr, c == 2 ? ins : nullptr, outs, c, HVD_OP_SUM,
                                         nullptr, &h);
    }
    case 15:
      return hvd_poll(PickHandle(rng));
    case 16:
      return hvd_wait(PickHandle(rng), static_cast<int64_t>(rng() % 3) - 1);
    case 17:
      return hvd_release(PickHandle(rng));
    case 18: {
      DLTensor r;
      return hvd_result(PickHandle(rng), rng() % 2 ? &r : nullptr);
    }
    case 19: {
      int32_t splits[4];
      int count = 0;
      return hvd_result_splits(PickHandle(rng), splits, static_cast<int>(rng() % 5) - 1, &count);
    }
    case 20: {
      const int32_t dup[] = {0, 0};
      const int32_t out_of_range[] = {0, size + static_cast<int32_t>(rng() % 10)};
      const int32_t neg[] = {-1};
      int32_t id = 0;
      switch (rng() % 4) {
        case 0:
          return hvd_add_process_set(nullptr, 1, &id);
        case 1:
          return hvd_add_process_set(dup, 2, &id);
        case 2:
          return hvd_add_process_set(out_of_range, 2, &id);
        default:
          return hvd_add_process_set(neg, rng() % 2 ? 1 : -5, &id);
      }
    }
    case 21:
      return hvd_remove_process_set(rng() % 2 ? 0 : 5000 + static_cast<int32_t>(rng() % 1000));
    case 22:
      return hvd_barrier(rng() % 2 ? -1 : 7000 + static_cast<int32_t>(rng() % 1000));
    case 23:
      return hvd_start_timeline(nullptr, 0);
    case 24: {
      hvd_init_options o = HVD_INIT_OPTIONS_INIT;
      o.struct_size = rng() % 2 ? 0 : sizeof(o) + 8;
      return hvd_init_with(&o);
    }
    default: {
      const int ps = 9000 + static_cast<int>(rng() % 1000);
      if (hvd_process_set_rank(ps) != -1 || hvd_process_set_size(ps) != -1) return HVD_OK;
      return hvd_join(ps, nullptr);
    }
  }
}

void AbuseThread(uint64_t seed, int calls, int size) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < calls; ++i) {
    std::string what;
    hvd_status s = OneInvalidCall(rng, &what, size);
    g_calls.fetch_add(1);
    if (s >= 0) {
      Fail("invalid call " + what + " returned " + std::to_string(s) + " (" + hvd_status_string(s) +
           ")");
    } else if (hvd_last_error()[0] == '\0') {
      Fail("invalid call " + what + " failed without a message");
    }
  }
}

void RunAbuse(uint64_t seed, int calls, int size) {
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(AbuseThread, seed * 131 + i, calls, size);
  for (auto& t : threads) t.join();
}

// Valid collectives with exact checks; their handles become stale ones.
void ValidRound(int round, int rank, int size) {
  std::vector<int32_t> v(64), expect(64);
  for (int i = 0; i < 64; ++i) {
    v[i] = rank * 1000 + i + round;
    expect[i] = 0;
    for (int r = 0; r < size; ++r) expect[i] += r * 1000 + i + round;
  }
  int64_t shape[1] = {64};
  DLTensor t{};
  t.data = v.data();
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = {kDLInt, 32, 1};
  t.shape = shape;
  hvd_handle h = 0;
  const std::string name = "valid.allreduce." + std::to_string(round);
  hvd_status s = hvd_allreduce_async(name.c_str(), &t, &t, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 60000);
  if (s != HVD_OK) Fail("valid allreduce: " + std::string(hvd_last_error()));
  if (v != expect) Fail("valid allreduce gave a wrong result in round " + std::to_string(round));
  if (hvd_release(h) != HVD_OK) Fail("release of a finished handle");
  if (hvd_release(h) != HVD_ERR_INVALID_ARGUMENT) Fail("second release was not INVALID_ARGUMENT");

  // Broadcast from the last rank.
  for (int i = 0; i < 64; ++i) v[i] = rank == size - 1 ? 7 * i + round : -1;
  const std::string bname = "valid.broadcast." + std::to_string(round);
  hvd_handle hb = 0;
  s = hvd_broadcast_async(bname.c_str(), &t, size - 1, nullptr, &hb);
  if (s == HVD_OK) s = hvd_wait(hb, 60000);
  if (s != HVD_OK) Fail("valid broadcast: " + std::string(hvd_last_error()));
  for (int i = 0; i < 64; ++i) {
    if (v[i] != 7 * i + round) {
      Fail("valid broadcast gave a wrong result");
      break;
    }
  }
  hvd_release(hb);
  std::lock_guard<std::mutex> l(g_stale_mu);
  g_stale.push_back(h);
  g_stale.push_back(hb);
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  // Before init: every call is refused, queries say -1.
  RunAbuse(1, calls / 4, 2);
  if (hvd_rank() != -1 || hvd_size() != -1) Fail("queries before init did not return -1");
  if (hvd_shutdown() >= 0 && hvd_is_initialized()) Fail("shutdown before init");

  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  if (hvd_init() != HVD_ERR_ALREADY_INITIALIZED) Fail("second hvd_init");
  for (int round = 0; round < kRounds; ++round) {
    // Abuse threads run while this thread's valid collectives do.
    std::thread abuse(RunAbuse, 1000 + rank * 7919 + round, calls / kRounds, size);
    ValidRound(round, rank, size);
    abuse.join();
  }
  hvd_shutdown();
  // After shutdown: refused again.
  RunAbuse(2, calls / 4, size);
  std::printf("rank %d: %ld invalid calls, %d failures\n", rank, g_calls.load(), g_failures.load());
  return g_failures.load() == 0 ? 0 : 1;
}
