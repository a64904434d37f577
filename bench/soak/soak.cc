// hvd_soak: a long random mix of every collective at once, each result
// checked exactly, watching for leaks (docs/fault-tolerance.md, "Soak").
//
//   hvdrun -np 3 build/bin/hvd_soak --backend gloo --duration 20m --seed 1
//   mpirun -np 3 build/bin/hvd_soak --backend mpi --duration 20m --seed 1
//
// Every rank draws the same plan from --seed (soak_ops.h), so the ranks
// agree on each collective without talking, and each computes the exact
// expected result locally. One small allreduce per round carries the stop
// vote and the error counts. Rank 0 prints a line per --report-every and a
// final table; the exit status is 0 only when every goal is met.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "bench/soak/proc_stats.h"
#include "bench/soak/soak_ops.h"

namespace soak {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRssGoalMiB = 5.0;
constexpr int kMaxPrintedErrors = 10;

struct Args {
  double duration_s = 20 * 60;
  double warmup_s = -1;  // default: a tenth of the run, at most 2 min
  double report_every_s = 60;
  double op_timeout_s = 300;
  uint64_t seed = 1;
  int max_batch = 8;
  std::string backend = "auto";
};

const char kUsage[] =
    "usage: hvd_soak [--duration T] [--seed N] [--warmup T] [--report-every T]\n"
    "                [--op-timeout T] [--max-batch N] [--backend mpi|gloo|auto]\n"
    "  T: seconds, or with a suffix s, m, h (20m). Defaults: --duration 20m,\n"
    "  --seed 1, --warmup a tenth of the duration (at most 2m), --report-every 1m,\n"
    "  --op-timeout 5m (a collective that takes longer ends the soak), --max-batch 8\n"
    "  (collectives in flight at once), --backend auto (mpi|gloo set\n"
    "  HVD_CONTROLLER and HVD_CPU_OPERATIONS). Start with hvdrun or mpirun, 1 to 8 ranks.\n";

bool ParseSeconds(const std::string& s, double* out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  const std::string unit = end;
  if (end == s.c_str() || v < 0) return false;
  if (unit == "m") v *= 60;
  if (unit == "h") v *= 3600;
  if (!unit.empty() && unit != "s" && unit != "m" && unit != "h") return false;
  *out = v;
  return true;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return false;
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    bool ok = true;
    if (flag == "--duration") {
      ok = ParseSeconds(v, &a->duration_s);
    } else if (flag == "--warmup") {
      ok = ParseSeconds(v, &a->warmup_s);
    } else if (flag == "--report-every") {
      ok = ParseSeconds(v, &a->report_every_s) && a->report_every_s > 0;
    } else if (flag == "--op-timeout") {
      ok = ParseSeconds(v, &a->op_timeout_s) && a->op_timeout_s > 0;
    } else if (flag == "--seed") {
      a->seed = std::strtoull(v.c_str(), nullptr, 0);
    } else if (flag == "--max-batch") {
      a->max_batch = std::atoi(v.c_str());
      ok = a->max_batch >= 1 && a->max_batch <= 64;
    } else if (flag == "--backend") {
      a->backend = v;
      ok = v == "mpi" || v == "gloo" || v == "auto";
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "hvd_soak: bad value '%s' for %s\n", v.c_str(), flag.c_str());
      return false;
    }
  }
  if (a->warmup_s < 0) a->warmup_s = std::min(120.0, a->duration_s / 10);
  return true;
}

double MiB(int64_t kib) {
  return static_cast<double>(kib) / 1024.0;
}

DLTensor Int64Tensor(void* data, int64_t* shape, int ndim) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = {kDLInt, 64, 1};
  t.shape = shape;
  return t;
}

std::string Duration(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

class Soak {
 public:
  Soak(const Args& args, int rank, int size)
      : args_(args),
        rank_(rank),
        size_(size),
        planner_(args.seed, size),
        local_rng_(args.seed * 7919 + static_cast<uint64_t>(rank)),
        slots_(static_cast<size_t>(args.max_batch)) {
    for (int r = 0; r < size; ++r) world_.push_back(r);
  }

  // Returns the process exit status.
  int Run(const ProcStats& before_init);

 private:
  struct Counts {
    int64_t ops = 0;  // collectives planned and completed (each once, whichever ranks ran it)
    std::array<int64_t, kKinds> by_kind{};
    int64_t checked = 0;  // results this rank verified
    int64_t wrong = 0, errors = 0;
    int64_t barriers = 0, joins = 0, sets_added = 0, sets_removed = 0, rounds = 0;
  };

  void Error(const std::string& what) {
    ++local_.errors;
    if (local_.errors <= kMaxPrintedErrors)
      std::fprintf(stderr, "rank %d: ERROR %s\n", rank_, what.c_str());
  }
  [[noreturn]] void Fatal(const std::string& what) {
    std::fprintf(stderr, "rank %d: FATAL %s; ending the soak\n", rank_, what.c_str());
    std::fflush(nullptr);
    ::_exit(3);
  }
  bool Member(const std::vector<int>& members) const {
    return std::find(members.begin(), members.end(), rank_) != members.end();
  }
  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void Wait(hvd_handle h, const std::string& what, bool* ok);
  void Release(hvd_handle h);
  void RunBatch(const std::vector<OpSpec>& specs);
  std::vector<OpSpec> HighWaterBatch() const;
  std::vector<OpSpec> DrawBatch(int32_t set_choice, const std::vector<int>& joined);
  void ProcessSetEvent();
  void JoinPhase();
  void BarrierEvent();
  void Control(bool* stop, bool* warm);
  void RemoveTempSet();
  void Report();
  int Final(const ProcStats& before_init, const ProcStats& init, const ProcStats& warm);

  Args args_;
  int rank_, size_;
  Planner planner_;
  std::mt19937_64 local_rng_;  // this rank's submission order only
  std::vector<Slot> slots_;
  std::vector<int> world_;
  int32_t temp_set_ = 0;
  std::vector<int> temp_members_;
  Clock::time_point start_;
  Counts local_;
  Counts global_;  // rank 0: wrong/errors summed over ranks by Control()
  int64_t sent_wrong_ = 0, sent_errors_ = 0;
  int64_t submitted_ = 0, released_ = 0;
  double next_report_ = 0;
  int64_t ops_at_last_report_ = 0;
  double last_report_time_ = 0;
  ProcStats warm_;
  bool warm_done_ = false;
};

void Soak::Wait(hvd_handle h, const std::string& what, bool* ok) {
  hvd_status s = hvd_wait(h, static_cast<int64_t>(args_.op_timeout_s * 1000));
  if (s == HVD_ERR_TIMEOUT && hvd_poll(h) == HVD_IN_PROGRESS) {
    Fatal(what + " did not complete within " + std::to_string(args_.op_timeout_s) + " s");
  }
  if (s != HVD_OK) {
    Error(what + ": " + hvd_status_string(s) + ": " + hvd_last_error());
    *ok = false;
  }
}

void Soak::Release(hvd_handle h) {
  if (hvd_release(h) == HVD_OK) {
    ++released_;
  } else {
    Error(std::string("hvd_release: ") + hvd_last_error());
  }
}

std::vector<OpSpec> Soak::DrawBatch(int32_t set_choice, const std::vector<int>& joined) {
  const int k = 1 + static_cast<int>(planner_.Uniform(static_cast<uint64_t>(args_.max_batch)));
  std::vector<OpSpec> specs;
  std::vector<std::string> taken_world, taken_temp;
  for (int i = 0; i < k; ++i) {
    const bool temp = set_choice != 0 && planner_.Chance(0.4);
    specs.push_back(temp ? planner_.Draw(temp_set_, temp_members_, joined, &taken_temp)
                         : planner_.Draw(0, world_, joined, &taken_world));
  }
  return specs;
}

void Soak::RunBatch(const std::vector<OpSpec>& specs) {
  std::vector<std::unique_ptr<RunningOp>> ops;
  std::vector<size_t> order;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!Member(specs[i].members)) continue;
    ops.push_back(std::make_unique<RunningOp>(&specs[i], &slots_[i], rank_));
    order.push_back(ops.size() - 1);
  }
  // Ranks submit in different orders: negotiation must not depend on it.
  std::shuffle(order.begin(), order.end(), local_rng_);
  for (size_t i : order) {
    std::string error;
    if (!ops[i]->Submit(&error)) Fatal(error);  // the other ranks would wait for it
    ++submitted_;
  }
  for (auto& op : ops) {
    bool ok = true;
    Wait(op->handle(),
         std::string(KindName(op->spec().kind)) + " '" + op->spec().tensors[0].name + "'", &ok);
    std::string error;
    if (ok && !op->Check(&error)) {
      ++local_.wrong;
      if (local_.wrong <= kMaxPrintedErrors)
        std::fprintf(stderr, "rank %d: %s\n", rank_, error.c_str());
    }
    ++local_.checked;
    Release(op->handle());
  }
  for (const auto& s : specs) {
    ++local_.ops;
    ++local_.by_kind[static_cast<int>(s.kind)];
  }
}

void Soak::ProcessSetEvent() {
  if (temp_set_ == 0 && planner_.Chance(0.05)) {
    std::vector<int> perm = world_;
    std::shuffle(perm.begin(), perm.end(), planner_.rng());
    const size_t n = 1 + planner_.Uniform(static_cast<uint64_t>(size_));
    std::vector<int32_t> ranks(perm.begin(), perm.begin() + static_cast<long>(n));
    int32_t id = 0;
    if (hvd_add_process_set(ranks.data(), static_cast<int>(n), &id) != HVD_OK) {
      Fatal(std::string("hvd_add_process_set: ") + hvd_last_error());
    }
    temp_members_.assign(ranks.begin(), ranks.end());
    std::sort(temp_members_.begin(), temp_members_.end());
    const int expect_rank =
        Member(temp_members_)
            ? static_cast<int>(std::find(temp_members_.begin(), temp_members_.end(), rank_) -
                               temp_members_.begin())
            : -1;
    if (id <= 0 || hvd_process_set_size(id) != static_cast<int>(n) ||
        hvd_process_set_rank(id) != expect_rank ||
        hvd_process_set_included(id) != (expect_rank >= 0 ? 1 : 0)) {
      Error("process set " + std::to_string(id) + " reports the wrong size, rank or membership");
    }
    temp_set_ = id;
    ++local_.sets_added;
  } else if (temp_set_ != 0 && planner_.Chance(0.08)) {
    RemoveTempSet();
  }
}

void Soak::RemoveTempSet() {
  if (temp_set_ == 0) return;
  if (hvd_remove_process_set(temp_set_) != HVD_OK) {
    Fatal(std::string("hvd_remove_process_set: ") + hvd_last_error());
  }
  if (hvd_process_set_size(temp_set_) != -1) Error("a removed process set still has a size");
  temp_set_ = 0;
  temp_members_.clear();
  ++local_.sets_removed;
}

// Some ranks join early; the others run allreduces (the joined ranks add
// zeros) and join last. Everyone draws the same batches.
void Soak::JoinPhase() {
  if (size_ < 2 || !planner_.Chance(0.02)) return;
  std::vector<int> perm = world_;
  std::shuffle(perm.begin(), perm.end(), planner_.rng());
  std::vector<int> early(perm.begin(),
                         perm.begin() + 1 + static_cast<long>(planner_.Uniform(size_ - 1)));
  std::sort(early.begin(), early.end());
  const int batches = 1 + static_cast<int>(planner_.Uniform(3));
  std::vector<std::vector<OpSpec>> plan;
  for (int b = 0; b < batches; ++b) plan.push_back(DrawBatch(0, early));
  if (!Member(early)) {
    for (const auto& specs : plan) RunBatch(specs);
  } else {
    for (const auto& specs : plan) {  // counted, though run by the others
      for (const auto& s : specs) {
        ++local_.ops;
        ++local_.by_kind[static_cast<int>(s.kind)];
      }
    }
  }
  int last = -1;
  if (hvd_join(0, &last) != HVD_OK) Fatal(std::string("hvd_join: ") + hvd_last_error());
  if (last < 0 || last >= size_ || std::find(early.begin(), early.end(), last) != early.end()) {
    Error("hvd_join says rank " + std::to_string(last) + " joined last, but it joined early");
  }
  ++local_.joins;
}

void Soak::BarrierEvent() {
  if (!planner_.Chance(0.03)) return;
  const bool temp = temp_set_ != 0 && planner_.Chance(0.5);
  if (temp && !Member(temp_members_)) return;
  const hvd_status s = hvd_barrier(temp ? temp_set_ : 0);
  if (s != HVD_OK) Fatal(std::string("hvd_barrier: ") + hvd_last_error());
  ++local_.barriers;
}

// The per-round control allreduce: stop and warm-up-over votes (so that all
// ranks act on them in the same round) and new wrong/error counts.
void Soak::Control(bool* stop, bool* warm) {
  const double now = Elapsed();
  int64_t v[4] = {now >= args_.duration_s ? 1 : 0, now >= args_.warmup_s ? 1 : 0,
                  local_.wrong - sent_wrong_, local_.errors - sent_errors_};
  sent_wrong_ = local_.wrong;
  sent_errors_ = local_.errors;
  int64_t shape[1] = {4};
  DLTensor t = Int64Tensor(v, shape, 1);
  hvd_handle h = 0;
  if (hvd_allreduce_async("soak.control", &t, &t, HVD_OP_SUM, nullptr, &h) != HVD_OK) {
    Fatal(std::string("control allreduce: ") + hvd_last_error());
  }
  ++submitted_;
  bool ok = true;
  Wait(h, "control allreduce", &ok);
  Release(h);
  if (!ok) Fatal("control allreduce failed");
  *stop = v[0] > 0;
  *warm = v[1] > 0;
  global_.wrong += v[2];
  global_.errors += v[3];
}

void Soak::Report() {
  const double t = Elapsed();
  if (rank_ != 0 || t < next_report_) return;
  const ProcStats p = ReadProcStats();
  const double rate = (local_.ops - ops_at_last_report_) / std::max(1e-9, t - last_report_time_);
  char growth[48] = "warm-up";
  if (warm_done_)
    std::snprintf(growth, sizeof(growth), "%+.1f MiB since warm-up",
                  MiB(p.rss_kib - warm_.rss_kib));
  std::printf(
      "soak %s: %lld ops (%.1f/s overall, %.1f/s since last line), wrong %lld, errors %lld, "
      "rank 0: RSS %.1f MiB (%s; anon %.1f, file %.1f, shmem %.1f), heap in use %.1f MiB, fds "
      "%lld, threads %lld\n",
      Duration(t).c_str(), static_cast<long long>(local_.ops), local_.ops / std::max(1e-9, t), rate,
      static_cast<long long>(global_.wrong), static_cast<long long>(global_.errors), MiB(p.rss_kib),
      growth, MiB(p.anon_kib), MiB(p.file_kib), MiB(p.shmem_kib), MiB(p.heap_kib),
      static_cast<long long>(p.fds), static_cast<long long>(p.threads));
  std::fflush(stdout);
  ops_at_last_report_ = local_.ops;
  last_report_time_ = t;
  next_report_ += args_.report_every_s;
}

// The largest batch the plan can draw, all fusable: it grows the fusion
// buffer to its final size during the warm-up, so that growth is not
// mistaken for a leak later.
std::vector<OpSpec> Soak::HighWaterBatch() const {
  std::vector<OpSpec> specs(static_cast<size_t>(args_.max_batch));
  for (size_t i = 0; i < specs.size(); ++i) {
    OpSpec& s = specs[i];
    s.key = Mix(args_.seed + i);
    s.members = world_;
    TensorSpec t;
    t.name = "soak.highwater." + std::to_string(i);
    t.dtype = &AllDtypes()[6];  // float32
    t.shape = {kMaxOpBytes / t.dtype->bytes};
    s.tensors.push_back(t);
  }
  return specs;
}

int Soak::Run(const ProcStats& before_init) {
  const ProcStats init = ReadProcStats();
  start_ = Clock::now();
  next_report_ = args_.report_every_s;
  RunBatch(HighWaterBatch());
  bool stop = false, warm = false;
  while (!stop) {
    ProcessSetEvent();
    JoinPhase();
    BarrierEvent();
    RunBatch(DrawBatch(temp_set_, {}));
    ++local_.rounds;
    Control(&stop, &warm);
    if (warm && !warm_done_) {
      // Measured, like the end, with no temporary process set alive: a set
      // holds its own connections (Gloo) and communicators, not leaks.
      RemoveTempSet();
      warm_ = ReadProcStats();
      warm_done_ = true;
    }
    Report();
  }
  RemoveTempSet();
  if (!warm_done_) warm_ = ReadProcStats();  // a run shorter than its warm-up
  return Final(before_init, init, warm_);
}

// One rank's end-of-run figures; only int64_t fields, so that the final
// allgather can carry it as an int64 tensor.
struct Figures {
  int64_t rss_warm, rss_end, heap_warm, heap_end;
  int64_t fds_init, fds_warm, fds_end, threads_init, threads_warm, threads_end;
  int64_t outstanding, wrong, errors, checked;
  int64_t anon_warm, anon_end, file_warm, file_end, shmem_warm, shmem_end;
};
constexpr int64_t kFigureFields = sizeof(Figures) / sizeof(int64_t);

void PrintTable(const std::vector<Figures>& all, bool* pass) {
  std::printf(
      "| rank | checked | wrong | errors | RSS after warm-up (MiB) | RSS end (MiB) | RSS growth "
      "(MiB) | of it anon/file/shmem (MiB) | heap in use growth (MiB) | fds init/warm-up/end | "
      "threads init/warm-up/end | "
      "handles outstanding |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int64_t wrong = 0, errors = 0, outstanding = 0;
  double worst_growth = -1e9;
  bool fds_equal = true, threads_equal = true;
  for (size_t q = 0; q < all.size(); ++q) {
    const Figures& f = all[q];
    const double growth = MiB(f.rss_end - f.rss_warm);
    worst_growth = std::max(worst_growth, growth);
    wrong += f.wrong;
    errors += f.errors;
    outstanding += f.outstanding;
    fds_equal &= f.fds_end == f.fds_warm;
    threads_equal &= f.threads_end == f.threads_warm;
    std::printf(
        "| %zu | %lld | %lld | %lld | %.1f | %.1f | %+.1f | %+.1f/%+.1f/%+.1f | %+.1f | "
        "%lld/%lld/%lld | %lld/%lld/%lld | %lld |\n",
        q, static_cast<long long>(f.checked), static_cast<long long>(f.wrong),
        static_cast<long long>(f.errors), MiB(f.rss_warm), MiB(f.rss_end), growth,
        MiB(f.anon_end - f.anon_warm), MiB(f.file_end - f.file_warm),
        MiB(f.shmem_end - f.shmem_warm), MiB(f.heap_end - f.heap_warm),
        static_cast<long long>(f.fds_init), static_cast<long long>(f.fds_warm),
        static_cast<long long>(f.fds_end), static_cast<long long>(f.threads_init),
        static_cast<long long>(f.threads_warm), static_cast<long long>(f.threads_end),
        static_cast<long long>(f.outstanding));
  }
  auto verdict = [pass](bool ok) {
    *pass &= ok;
    return ok ? "PASS" : "FAIL";
  };
  std::printf(
      "\ngoals: wrong results 0: %s (%lld); errors 0: %s (%lld); RSS growth after warm-up "
      "<= %.0f MiB: %s (worst %+.1f MiB); fds equal: %s; threads equal: %s; handles "
      "outstanding 0: %s (%lld)\n",
      verdict(wrong == 0), static_cast<long long>(wrong), verdict(errors == 0),
      static_cast<long long>(errors), kRssGoalMiB, verdict(worst_growth <= kRssGoalMiB),
      worst_growth, verdict(fds_equal), verdict(threads_equal), verdict(outstanding == 0),
      static_cast<long long>(outstanding));
}

// Gathers every rank's figures on rank 0, prints the table and the verdict.
int Soak::Final(const ProcStats& before_init, const ProcStats& init, const ProcStats& warm) {
  const double elapsed = Elapsed();
  const ProcStats end = ReadProcStats();
  Figures mine = {warm.rss_kib,
                  end.rss_kib,
                  warm.heap_kib,
                  end.heap_kib,
                  init.fds,
                  warm.fds,
                  end.fds,
                  init.threads,
                  warm.threads,
                  end.threads,
                  submitted_ - released_,
                  local_.wrong,
                  local_.errors,
                  local_.checked,
                  warm.anon_kib,
                  end.anon_kib,
                  warm.file_kib,
                  end.file_kib,
                  warm.shmem_kib,
                  end.shmem_kib};
  int64_t shape[2] = {1, kFigureFields};
  DLTensor t = Int64Tensor(&mine, shape, 2);
  hvd_handle h = 0;
  bool ok = hvd_allgather_async("soak.final", &t, nullptr, &h) == HVD_OK;
  if (ok) Wait(h, "final allgather", &ok);
  DLTensor r{};
  if (ok) ok = hvd_result(h, &r) == HVD_OK && r.shape[0] == size_;
  if (!ok) Fatal(std::string("final allgather: ") + hvd_last_error());
  std::vector<Figures> all(static_cast<size_t>(size_));
  std::memcpy(all.data(), r.data, all.size() * sizeof(Figures));
  hvd_release(h);
  bool pass = true;
  if (rank_ == 0) {
    const char* backend = hvd_mpi_enabled() ? "mpi" : hvd_gloo_enabled() ? "gloo" : "?";
    std::printf("\nsoak result: backend %s, np %d, seed %llu, %s (warm-up %s), %lld rounds\n",
                backend, size_, static_cast<unsigned long long>(args_.seed),
                Duration(elapsed).c_str(), Duration(args_.warmup_s).c_str(),
                static_cast<long long>(local_.rounds));
    std::printf("ops: %lld, %.1f/s (", static_cast<long long>(local_.ops), local_.ops / elapsed);
    for (int k = 0; k < kKinds; ++k) {
      std::printf("%s%s %lld", k ? ", " : "", KindName(static_cast<Kind>(k)),
                  static_cast<long long>(local_.by_kind[k]));
    }
    std::printf("); barriers %lld, joins %lld, process sets added %lld / removed %lld\n\n",
                static_cast<long long>(local_.barriers), static_cast<long long>(local_.joins),
                static_cast<long long>(local_.sets_added),
                static_cast<long long>(local_.sets_removed));
    PrintTable(all, &pass);
    std::fflush(stdout);
  }
  if (hvd_shutdown() != HVD_OK) {
    std::fprintf(stderr, "rank %d: hvd_shutdown: %s\n", rank_, hvd_last_error());
    pass = false;
  }
  const ProcStats after = ReadProcStats();
  std::printf(
      "rank %d after hvd_shutdown: fds %lld, threads %lld (before hvd_init: fds %lld, "
      "threads %lld)\n",
      rank_, static_cast<long long>(after.fds), static_cast<long long>(after.threads),
      static_cast<long long>(before_init.fds), static_cast<long long>(before_init.threads));
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace soak

int main(int argc, char** argv) {
  soak::Args args;
  if (!soak::ParseArgs(argc, argv, &args)) {
    std::fputs(soak::kUsage, stderr);
    return 2;
  }
  if (args.backend != "auto") {
    setenv("HVD_CONTROLLER", args.backend.c_str(), 1);
    setenv("HVD_CPU_OPERATIONS", args.backend.c_str(), 1);
  }
  // The soak draws tensor sizes at random up to 8 MiB. glibc's default mmap
  // threshold follows the largest block freed (up to 32 MiB), so after the
  // first big tensor every later one is carved from the heap, and a random
  // mix of sizes fragments it: RSS then wanders by tens of MiB without any
  // memory being held. A fixed threshold maps and unmaps big blocks, as the
  // fixed-size tensors of a training step do, so RSS shows what is held.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  const soak::ProcStats before_init = soak::ReadProcStats();
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_soak: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  if (size > 8) {
    std::fprintf(stderr, "hvd_soak: at most 8 ranks (the exact values are sized for 8)\n");
    hvd_shutdown();
    return 2;
  }
  if (rank == 0) {
    std::printf(
        "hvd_soak: np %d, seed %llu, duration %.0f s, warm-up %.0f s, up to %d collectives "
        "in flight\n",
        size, static_cast<unsigned long long>(args.seed), args.duration_s, args.warmup_s,
        args.max_batch);
    std::fflush(stdout);
  }
  soak::Soak s(args, rank, size);
  return s.Run(before_init);
}
