// One rank of the timeline / stall / logging tests. run_checks.py launches it
// under mpirun or hvdrun and checks the files and stderr it leaves; this
// program only runs a known sequence of collectives (argv[1] picks which)
// and exits non-zero when a result or status is not the expected one.
#include <dlpack/dlpack.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

int g_failures = 0;

void Expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "CHECK FAILED (rank %d): %s\n", hvd_rank(), what.c_str());
  ++g_failures;
}

// A float32 or int32 host tensor; the data vector outlives the DLTensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  DLTensor dl{};
  Tensor(std::vector<int64_t> s, float fill, DLDataTypeCode code = kDLFloat) : shape(std::move(s)) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    data.assign(static_cast<size_t>(n) + 1, fill);  // float and int32 share the size
    if (code == kDLInt) {
      auto v = static_cast<int32_t>(fill);
      for (auto& x : data) std::memcpy(&x, &v, sizeof v);
    }
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {static_cast<uint8_t>(code), 32, 1};
    dl.shape = shape.data();
  }
  int32_t Int(size_t i) const {
    int32_t v;
    std::memcpy(&v, &data[i], sizeof v);
    return v;
  }
};

hvd_status Wait(hvd_handle h, int64_t ms = 60000) {
  hvd_status s = hvd_wait(h, ms);
  hvd_release(h);
  return s;
}

// Allreduce of `rank + 1` everywhere: the sum is size*(size+1)/2.
void Allreduce(const std::string& name, std::vector<int64_t> shape) {
  Tensor t(shape, static_cast<float>(hvd_rank() + 1));
  hvd_handle h;
  hvd_status s = hvd_allreduce_async(name.c_str(), &t.dl, &t.dl, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = Wait(h);
  const float want = hvd_size() * (hvd_size() + 1) / 2.0f;
  Expect(s == HVD_OK && t.data[0] == want, "allreduce " + name);
}

void Basic() {
  // Fused: one group of three float32 tensors goes through the fusion buffer.
  std::vector<Tensor> ts;
  ts.reserve(3);
  ts.emplace_back(std::vector<int64_t>{4}, 1.0f);
  ts.emplace_back(std::vector<int64_t>{2, 3}, 1.0f);
  ts.emplace_back(std::vector<int64_t>{5}, 1.0f);
  const char* names[] = {"fused.a", "fused.b", "fused.c"};
  const DLTensor* in[] = {&ts[0].dl, &ts[1].dl, &ts[2].dl};
  DLTensor* out[] = {&ts[0].dl, &ts[1].dl, &ts[2].dl};
  hvd_handle h;
  hvd_status s = hvd_grouped_allreduce_async(names, in, out, 3, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = Wait(h);
  Expect(s == HVD_OK && ts[2].data[4] == static_cast<float>(hvd_size()), "grouped allreduce");

  // Unfused, three times: negotiated once, then answered by the cache.
  for (int i = 0; i < 3; ++i) Allreduce("single", {8});

  // Allgather: rank r contributes r + 1 rows of 2.
  Tensor g({hvd_rank() + 1, 2}, static_cast<float>(hvd_rank()));
  s = hvd_allgather_async("gather", &g.dl, nullptr, &h);
  DLTensor res{};
  if (s == HVD_OK) s = hvd_wait(h, 60000);
  if (s == HVD_OK) s = hvd_result(h, &res);
  const int64_t rows = hvd_size() * (hvd_size() + 1) / 2;
  Expect(s == HVD_OK && res.ndim == 2 && res.shape[0] == rows, "allgather");
  hvd_release(h);

  // Broadcast of int32 from rank 0.
  Tensor b({3}, hvd_rank() == 0 ? 7.0f : 0.0f, kDLInt);
  s = hvd_broadcast_async("bcast", &b.dl, 0, nullptr, &h);
  if (s == HVD_OK) s = Wait(h);
  Expect(s == HVD_OK && b.Int(2) == 7, "broadcast");
}

// Grouped allgather of two float32 tensors and grouped reducescatter of two
// float32 tensors and one int32 tensor: the float32 members of each group
// share one fused collective, the int32 one runs on its own.
void Grouped() {
  std::vector<Tensor> ts;
  ts.reserve(5);
  ts.emplace_back(std::vector<int64_t>{hvd_rank() + 1, 2}, 1.0f);  // uneven rows
  ts.emplace_back(std::vector<int64_t>{3}, 2.0f);
  ts.emplace_back(std::vector<int64_t>{2 * hvd_size() + 1}, 1.0f);
  ts.emplace_back(std::vector<int64_t>{hvd_size(), 2}, 1.0f);
  ts.emplace_back(std::vector<int64_t>{hvd_size()}, 3.0f, kDLInt);
  const char* gnames[] = {"ggather.a", "ggather.b"};
  const DLTensor* gin[] = {&ts[0].dl, &ts[1].dl};
  hvd_handle h;
  hvd_status s = hvd_grouped_allgather_async(gnames, gin, 2, nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 60000);
  DLTensor r{};
  if (s == HVD_OK) s = hvd_result_at(h, 1, &r);
  Expect(s == HVD_OK && r.shape[0] == 3 * hvd_size() && static_cast<float*>(r.data)[0] == 2.0f,
         "grouped allgather");
  hvd_release(h);
  const char* rnames[] = {"gscatter.a", "gscatter.b", "gscatter.i"};
  const DLTensor* rin[] = {&ts[2].dl, &ts[3].dl, &ts[4].dl};
  s = hvd_grouped_reducescatter_async(rnames, rin, 3, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 60000);
  if (s == HVD_OK) s = hvd_result_at(h, 2, &r);
  Expect(s == HVD_OK && r.shape[0] == 1 && static_cast<int32_t*>(r.data)[0] == 3 * hvd_size(),
         "grouped reducescatter");
  hvd_release(h);
}

// HVD_TIMELINE names file 1; argv[2] is file 2, recorded only around phase2.
// Barriers keep one rank's early request out of the other phase's file.
void Runtime(const char* second) {
  Allreduce("phase1", {4});
  Expect(hvd_barrier(0) == HVD_OK, "barrier 1");
  Expect(hvd_start_timeline(second, 1) == HVD_OK, "hvd_start_timeline");
  Expect(hvd_barrier(0) == HVD_OK, "barrier 2");
  Allreduce("phase2", {4});
  Allreduce("phase2", {4});
  Expect(hvd_barrier(0) == HVD_OK, "barrier 3");
  Expect(hvd_stop_timeline() == HVD_OK, "hvd_stop_timeline");
  Expect(hvd_barrier(0) == HVD_OK, "barrier 4");
  Allreduce("phase3", {4});
}

// Rank 0 is killed by SIGKILL while the loop (and the timeline) is busy.
void Kill() {
  if (hvd_rank() == 0) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      std::raise(SIGKILL);
    }).detach();
  }
  for (int i = 0; i < 1000000; ++i) {
    Tensor t({16}, 1.0f);
    hvd_handle h;
    std::string name = "loop." + std::to_string(i % 7);
    if (hvd_allreduce_async(name.c_str(), &t.dl, &t.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK) break;
    if (Wait(h, 20000) != HVD_OK) break;  // a peer died: the launcher ends the job
  }
  std::_Exit(3);  // never a clean exit: rank 0 must have been killed first
}

// Rank 1 never submits `name` (or only after `late_s` seconds); rank 0
// reports how its wait ended on stdout for run_checks.py.
void Stall(const std::string& name, bool cached, double late_s) {
  Allreduce("warmup", {2});
  if (cached) {
    for (int i = 0; i < 5; ++i) Allreduce(name, {3});
  }
  if (hvd_rank() != 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(late_s));
    if (late_s < 5) Allreduce(name, {3});  // the warning case: arrive late
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  Tensor t({3}, 1.0f);
  hvd_handle h;
  hvd_status s = hvd_allreduce_async(name.c_str(), &t.dl, &t.dl, HVD_OP_SUM, nullptr, &h);
  std::string err;
  if (s == HVD_OK) {
    s = hvd_wait(h, 20000);
    err = hvd_last_error();
    hvd_release(h);
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("STALL_RESULT status=%d seconds=%.2f error=%s\n", static_cast<int>(s), took,
              s == HVD_OK ? "" : err.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s basic|grouped|runtime FILE2|kill|stall MODE|log\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  if (mode == "basic") {
    Basic();
  } else if (mode == "grouped") {
    Grouped();
  } else if (mode == "runtime" && argc > 2) {
    Runtime(argv[2]);
  } else if (mode == "kill") {
    Kill();
  } else if (mode == "stall" && argc > 2) {
    // fresh|cached x warn (rank 1 comes 4 s late) | timeout (never comes).
    const std::string how = argv[2];
    const bool cached = how.rfind("cached", 0) == 0;
    const bool warn = how.find("warn") != std::string::npos;
    Stall(cached ? "stall.cached" : "stall.fresh", cached, warn ? 4.0 : 8.0);
  } else if (mode == "log") {
    Allreduce("log", {1});
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  hvd_shutdown();
  return g_failures == 0 ? 0 : 1;
}
