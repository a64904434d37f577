// The real job of the store abuse test (store_abuse_test.cc), run under
// hvdrun. Rank 0 publishes the store's port; every rank then waits for the
// driver's "go" (the abuse is under way by then), and times hvd_init plus
// exact collectives against hvdrun's store. It reports through files in the
// directory given as argv[1]:
//   port            rank 0: HVD_RENDEZVOUS_PORT
//   ready.<rank>    the rank is up and waits for "go"
//   ok.<rank>       "<seconds from go to hvd_init done> <seconds to job done>"
// and waits for "done" before exiting, so hvdrun (and its store) stays up
// while the driver measures it. Every wait is bounded.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

using Clock = std::chrono::steady_clock;

bool Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// Waits up to `seconds` for `path` to exist.
bool WaitFor(const std::string& path, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (!Exists(path)) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Written under a temporary name and renamed, so the reader never sees half.
bool WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  std::fputs(text.c_str(), f);
  return std::fclose(f) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0;
}

int Fail(int rank, const std::string& what) {
  std::fprintf(stderr, "store_abuse_rank %d: %s\n", rank, what.c_str());
  return 1;
}

DLTensor Tensor1D(void* data, int64_t* shape, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

// Sum allreduce of rank-dependent int64 values, checked exactly.
bool CheckedAllreduce(int rank, int size, int64_t n, std::string* error) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (rank + 1) * 1000003 + i;
  int64_t shape[1] = {n};
  DLTensor t = Tensor1D(v.data(), shape, {kDLInt, 64, 1});
  hvd_handle h = 0;
  const std::string name = "abuse.allreduce." + std::to_string(n);
  hvd_status s = hvd_allreduce_async(name.c_str(), &t, &t, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 30000);
  if (s != HVD_OK) {
    *error = name + ": " + hvd_last_error();
    return false;
  }
  hvd_release(h);
  const int64_t rank_sum = int64_t{size} * (size + 1) / 2 * 1000003;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] != rank_sum + size * i) {
      *error = name + ": element " + std::to_string(i) + " is " + std::to_string(v[i]) +
               ", expected " + std::to_string(rank_sum + size * i);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail(-1, "usage: store_abuse_rank DIR");
  const std::string dir = argv[1];
  const char* rank_env = std::getenv("HVD_RANK");
  const char* port_env = std::getenv("HVD_RENDEZVOUS_PORT");
  if (rank_env == nullptr || port_env == nullptr) return Fail(-1, "not started by hvdrun");
  const int env_rank = std::atoi(rank_env);
  if (env_rank == 0 && !WriteFile(dir + "/port", port_env)) return Fail(0, "cannot write port");
  if (!WriteFile(dir + "/ready." + std::string(rank_env), "\n")) {
    return Fail(env_rank, "cannot write ready");
  }
  if (!WaitFor(dir + "/go", 60)) return Fail(env_rank, "no go from the driver within 60 s");

  const auto go = Clock::now();
  if (hvd_init() != HVD_OK) return Fail(env_rank, std::string("hvd_init: ") + hvd_last_error());
  const double init_s = std::chrono::duration<double>(Clock::now() - go).count();
  const int rank = hvd_rank(), size = hvd_size();
  std::string error;
  for (int64_t n : {1, 1000, 1 << 16}) {
    if (!CheckedAllreduce(rank, size, n, &error)) return Fail(rank, error);
  }
  if (hvd_barrier(0) != HVD_OK) {
    return Fail(rank, std::string("barrier: ") + hvd_last_error());
  }
  const double job_s = std::chrono::duration<double>(Clock::now() - go).count();
  if (hvd_shutdown() != HVD_OK) return Fail(rank, std::string("shutdown: ") + hvd_last_error());
  char line[64];
  std::snprintf(line, sizeof(line), "%.3f %.3f\n", init_s, job_s);
  if (!WriteFile(dir + "/ok." + std::to_string(rank), line)) return Fail(rank, "cannot write ok");
  std::printf("rank %d of %d: hvd_init %.3f s after go, job done %.3f s after go\n", rank, size,
              init_s, job_s);
  if (!WaitFor(dir + "/done", 90)) return Fail(rank, "no done from the driver within 90 s");
  return 0;
}
