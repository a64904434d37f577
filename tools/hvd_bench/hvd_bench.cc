// hvd_bench: runs the workloads of shared/bench/WORKLOADS.md (or any shape
// file) through hvd and, in the same launch and on the same buffers,
// through the raw patterns of the backend hvd runs on (raw MPI under
// mpirun, raw Gloo on a second context under hvdrun), and prints one table
// on rank 0.
//
//   mpirun -np 2 hvd_bench / hvdrun -np 2 hvd_bench [--workloads W1,...,FILE]
//                          [--rounds N] [--idle [S]] [--csv FILE] ...  (--help)
//
// Per workload and round: the raw patterns before hvd_init, then hvd_init,
// hvd, the raw patterns again with hvd initialised and idle, hvd_shutdown.
// One hvd iteration submits an async allreduce (SUM, float32) for every
// tensor in order, then waits for all. Inputs are rank+1, so every result
// is exactly n(n+1)/2; the first iteration of every implementation in every
// round is checked. Exit code: 0 when every check passed.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "tools/hvd_bench/buffers.h"
#include "tools/hvd_bench/fail.h"
#include "tools/hvd_bench/hvd_ops.h"
#include "tools/hvd_bench/options.h"
#include "tools/hvd_bench/paired.h"
#include "tools/hvd_bench/raw_baseline.h"
#include "tools/hvd_bench/report.h"
#include "tools/hvd_bench/timing.h"
#include "tools/hvd_bench/workloads.h"

namespace hvdbench {
namespace {

constexpr double kIdleSettleSeconds = 0.5;

// One implementation's per-round medians.
struct Series {
  std::string impl;
  std::vector<double> ms;
  bool ok = true;
  std::string note;
};

// hvd's own memory traffic per allreduced byte while `fn` runs `iterations`
// times, its collectives per iteration and the share of its large
// shared-memory collectives written with streaming stores (from
// hvd_get_stats), or "" where nothing was allreduced on the host.
template <typename Fn>
std::string Traffic(int iterations, const Fn& fn) {
  hvd_stats a{};
  a.struct_size = sizeof a;
  hvd_stats b = a;
  Check(hvd_get_stats(&a), "hvd_get_stats");
  fn();
  Check(hvd_get_stats(&b), "hvd_get_stats");
  const double reduced = static_cast<double>(b.allreduced_bytes - a.allreduced_bytes);
  if (reduced <= 0) return "";
  char head[96];
  std::snprintf(head, sizeof head, "hvd moves %.1f B per B in %.2f collectives per iteration",
                static_cast<double>(b.host_bytes_moved - a.host_bytes_moved) / reduced,
                static_cast<double>(b.host_allreduces - a.host_allreduces) / iterations);
  std::string text = head;
  auto percent = [&text](const char* what, uint64_t part, uint64_t whole) {
    if (whole == 0) return;
    char p[24];
    std::snprintf(p, sizeof p, ", %.0f%% ",
                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
    text += p;
    text += what;
  };
  percent("streamed", b.shm_streamed_calls - a.shm_streamed_calls,
          b.shm_chosen_calls - a.shm_chosen_calls);
  if (b.shm_mapped_calls > a.shm_mapped_calls) {
    percent("between shared buffers", b.shm_mapped_calls - a.shm_mapped_calls,
            b.host_allreduces - a.host_allreduces);
  }
  if (b.shm_backend_calls > a.shm_backend_calls) {
    percent("through MPI's allreduce", b.shm_backend_calls - a.shm_backend_calls,
            b.host_allreduces - a.host_allreduces);
  }
  if (b.shm_peer_read_calls > a.shm_peer_read_calls) {
    percent("reading the peers' memory", b.shm_peer_read_calls - a.shm_peer_read_calls,
            b.host_allreduces - a.host_allreduces);
  }
  return text;
}

// Below this, a slower idle figure is timer and scheduling noise.
constexpr double kNoiseFloor = 0.05;

// SLOWER when the idle median exceeds the pre-init one by more than the
// run-to-run noise: the larger range over rounds, at least 5%.
bool SlowerThanNoise(const Summary& before, const Summary& idle) {
  const double noise =
      std::max({before.max - before.min, idle.max - idle.min, kNoiseFloor * before.median});
  return idle.median - before.median > noise;
}

class Bench {
 public:
  Bench(const Args& args, Backend planned, int64_t chunk_bytes, int64_t cache_chunk_bytes)
      : args_(args), planned_(planned), chunk_bytes_(chunk_bytes) {
    chunks_.elems = chunk_bytes > 0 ? std::max<int64_t>(1, chunk_bytes / 4) : 0;
    chunks_.cache_elems = cache_chunk_bytes / 4;
  }

  int Run(const std::vector<Workload>& workloads);

 private:
  void CreateRaw();
  void StartHvd();
  void RunWorkload(const Workload& wl, bool last_workload);
  void AddRows(const Workload& wl, const std::vector<RawPattern>& patterns,
               const std::vector<Series>& before, const Series& best,
               const std::vector<Series>& hvds, const std::vector<Series>& idle,
               const Series& best_idle);
  // --paired: one round of hvd in place and the in-place raw patterns in
  // turn; series [0] is hvd, then one per pattern, then their best.
  void TimePairedRound(const Workload& wl, Buffers& b, std::vector<hvd_handle>& handles,
                       const std::vector<RawPattern>& in_place, std::vector<Series>* paired);
  void AddPairedRows(const Workload& wl, const std::vector<Series>& paired);
  Row MakeRow(const Workload& wl, const Series& s, double best_raw) const;
  std::string RawImpl(const char* what) const {
    return std::string(what) + " " + BackendName(planned_);
  }

  const Args& args_;
  const Backend planned_;
  const int64_t chunk_bytes_;
  Chunks chunks_;
  std::unique_ptr<RawComm> raw_;
  bool raw_timing_ = false;  // raw patterns before hvd_init
  bool raw_idle_ = false;    // and again beside an idle hvd
  int rank_ = 0, size_ = 1;
  bool all_ok_ = true;
  std::vector<std::string> notes_;
  std::vector<Row> rows_;
};

void Bench::CreateRaw() {
  if (!args_.raw) notes_.push_back("raw baselines skipped (--no-raw)");
  if (!args_.raw && args_.idle_seconds <= 0) return;  // no raw context needed
  std::string why;
  raw_ = CreateRawComm(planned_, &why);
  if (!raw_) {
    notes_.push_back(std::string("raw ") + BackendName(planned_) + " baseline skipped: " + why);
    return;
  }
  rank_ = raw_->rank();
  size_ = raw_->size();
  SetMessageRank(rank_);
  raw_timing_ = args_.raw;
  if (raw_timing_) {
    raw_idle_ = raw_->UsableBesideHvd(&why);
    if (!raw_idle_) {
      notes_.push_back(std::string("raw ") + BackendName(planned_) +
                       " baseline with hvd idle skipped: " + why);
    }
  }
}

void Bench::StartHvd() {
  Check(hvd_init(), "hvd_init");
  const bool on_planned = planned_ == Backend::kMpi ? hvd_mpi_enabled() : hvd_gloo_enabled();
  if (!on_planned) {
    Die(std::string("hvd runs on ") + (hvd_mpi_enabled() ? "MPI" : "Gloo") +
        ", but the raw baseline was set up for " + BackendName(planned_) +
        " from the environment; name the backend with --backend mpi|gloo");
  }
  if (raw_ && (hvd_rank() != raw_->rank() || hvd_size() != raw_->size())) {
    Die("hvd is rank " + std::to_string(hvd_rank()) + " of " + std::to_string(hvd_size()) +
        ", the raw baseline rank " + std::to_string(raw_->rank()) + " of " +
        std::to_string(raw_->size()));
  }
  rank_ = hvd_rank();
  size_ = hvd_size();
  SetMessageRank(rank_);
}

Row Bench::MakeRow(const Workload& wl, const Series& s, double best_raw) const {
  Row r;
  r.workload = wl.name;
  r.impl = s.impl;
  r.ms = Summarize(s.ms);
  r.busbw_gbs = BusBw(wl.bytes(), r.ms.median, size_);
  if (best_raw > 0) r.ratio = r.ms.median / best_raw;
  r.ok = s.ok;
  return r;
}

void Bench::AddRows(const Workload& wl, const std::vector<RawPattern>& patterns,
                    const std::vector<Series>& before, const Series& best,
                    const std::vector<Series>& hvds, const std::vector<Series>& idle,
                    const Series& best_idle) {
  const Summary best_sum = Summarize(best.ms);
  const double best_raw = raw_timing_ ? best_sum.median : -1;
  std::vector<Row> rows;
  for (const Series& s : before) rows.push_back(MakeRow(wl, s, best_raw));
  if (raw_timing_) {
    Row r = MakeRow(wl, best, best_raw);
    size_t fastest = 0;  // the pattern with the lowest median over rounds
    for (size_t i = 1; i < patterns.size(); ++i) {
      if (rows[i].ms.median < rows[fastest].ms.median) fastest = i;
    }
    r.note = std::string("fastest: ") + PatternName(patterns[fastest]);
    rows.push_back(r);
  }
  for (const Series& hvd : hvds) {
    rows.push_back(MakeRow(wl, hvd, best_raw));
    rows.back().note = hvd.note;
  }
  for (const Series& s : idle) rows.push_back(MakeRow(wl, s, best_raw));
  if (raw_idle_) {
    Row r = MakeRow(wl, best_idle, best_raw);
    if (SlowerThanNoise(best_sum, r.ms)) r.note = "SLOWER than before hvd_init";
    rows.push_back(r);
  }
  for (Row& r : rows) {
    all_ok_ = all_ok_ && r.ok;
    rows_.push_back(std::move(r));
  }
}

void Bench::TimePairedRound(const Workload& wl, Buffers& b, std::vector<hvd_handle>& handles,
                            const std::vector<RawPattern>& in_place, std::vector<Series>* paired) {
  std::vector<PairedImpl> impls{{[&] { HvdIteration(b, handles, true); }, true}};
  for (RawPattern p : in_place)
    impls.push_back({[&, p] { RunPattern(*raw_, p, b, chunks_); }, true});
  const std::vector<double> ms = TimePaired(wl, b, size_, &impls, [&] { raw_->Barrier(); });
  std::vector<Series>& v = *paired;
  double best = -1;
  for (size_t i = 0; i < impls.size(); ++i) {
    v[i].ms.push_back(ms[i]);
    v[i].ok = v[i].ok && impls[i].ok;
    if (i > 0 && (best < 0 || ms[i] < best)) best = ms[i];
  }
  v.back().ms.push_back(best);
}

void Bench::AddPairedRows(const Workload& wl, const std::vector<Series>& paired) {
  if (paired.empty()) return;
  const double best = Summarize(paired.back().ms).median;
  for (const Series& s : paired) {
    Row r = MakeRow(wl, s, best);
    r.note = "ratio to the best paired raw";
    all_ok_ = all_ok_ && r.ok;
    rows_.push_back(std::move(r));
  }
}

void Bench::RunWorkload(const Workload& wl, bool last_workload) {
  if (!raw_ && !hvd_is_initialized()) StartHvd();  // the rank comes from hvd
  const Memory memory = args_.shared_buffers ? Memory::kShared
                        : args_.huge_pages   ? Memory::kHugePages
                                             : Memory::kHeap;
  Buffers b(wl, args_.gap, args_.in_place, rank_, memory);
  std::vector<hvd_handle> handles(b.tensors());
  const std::vector<RawPattern> patterns =
      raw_timing_ ? PatternsFor(b, chunks_) : std::vector<RawPattern>{};
  std::vector<Series> before, idle;
  for (RawPattern p : patterns) {
    before.push_back(Series{RawImpl("raw") + " " + PatternName(p), {}, true, {}});
    if (raw_idle_) idle.push_back(Series{before.back().impl + " (hvd idle)", {}, true, {}});
  }
  Series best{RawImpl("best raw"), {}, true, {}};
  Series best_idle{RawImpl("best raw") + " (hvd idle)", {}, true, {}};
  // hvd as the raw patterns run: from the input into the output, and, where
  // they also run in place, in place on the output.
  std::vector<Series> hvds{Series{"hvd", {}, true, {}}};
  if (b.has_output()) hvds.push_back(Series{"hvd, in place", {}, true, {}});
  std::vector<RawPattern> in_place;
  std::vector<Series> paired;
  if (args_.paired && raw_idle_ && b.has_output()) {
    for (RawPattern p : patterns) {
      if (InPlace(p)) in_place.push_back(p);
    }
    paired.push_back(Series{"hvd, in place (paired)", {}, true, {}});
    for (RawPattern p : in_place) {
      paired.push_back(Series{RawImpl("raw") + " " + PatternName(p) + " (paired)", {}, true, {}});
    }
    paired.push_back(Series{RawImpl("best raw") + " (paired)", {}, true, {}});
  }

  // Times every raw pattern once into `series` and their minimum into `min`.
  auto time_patterns = [&](std::vector<Series>& series, Series& min) {
    double lowest = -1;
    for (size_t i = 0; i < patterns.size(); ++i) {
      b.set_output_starts_as_input(InPlace(patterns[i]));
      const double ms = TimeIt(
          wl, b, size_, &series[i].ok, [&] { RunPattern(*raw_, patterns[i], b, chunks_); },
          [&] { raw_->Barrier(); });
      b.set_output_starts_as_input(false);
      series[i].ms.push_back(ms);
      if (lowest < 0 || ms < lowest) lowest = ms;
    }
    min.ms.push_back(lowest);
  };

  for (int round = 0; round < args_.rounds; ++round) {
    if (raw_timing_) time_patterns(before, best);
    if (!hvd_is_initialized()) StartHvd();
    for (size_t i = 0; i < hvds.size(); ++i) {
      Series& hvd = hvds[i];
      const bool in_place = i == 1;
      b.set_output_starts_as_input(in_place);
      hvd.note = Traffic(wl.warmup + wl.iters, [&] {
        hvd.ms.push_back(TimeIt(
            wl, b, size_, &hvd.ok, [&] { HvdIteration(b, handles, in_place); }, HvdBarrier));
      });
      b.set_output_starts_as_input(false);
    }
    if (raw_idle_) time_patterns(idle, best_idle);
    if (!paired.empty()) TimePairedRound(wl, b, handles, in_place, &paired);
    // Shut down so that the next round's raw figures are again without hvd;
    // the last one stays up for --idle and the gathering of results.
    const bool last = last_workload && round + 1 == args_.rounds;
    if (raw_timing_ && !last) Check(hvd_shutdown(), "hvd_shutdown");
  }
  AddRows(wl, patterns, before, best, hvds, idle, best_idle);
  AddPairedRows(wl, paired);
  if (rank_ == 0) {
    std::fprintf(stderr, "hvd_bench: %s done (%zu tensors, %s, %d rounds of %d+%d iterations)\n",
                 wl.name.c_str(), wl.counts.size(), FormatBytes(wl.bytes()).c_str(), args_.rounds,
                 wl.warmup, wl.iters);
  }
}

int Bench::Run(const std::vector<Workload>& workloads) {
  CreateRaw();

  // The zero line: only MPI (or the raw Gloo context) is up.
  double idle_zero = -1;
  if (args_.idle_seconds > 0 && raw_) {
    raw_->Barrier();
    idle_zero = IdleCpuPerSecond(args_.idle_seconds, kIdleSettleSeconds);
  }

  for (size_t i = 0; i < workloads.size(); ++i) {
    RunWorkload(workloads[i], i + 1 == workloads.size());
  }
  if (!hvd_is_initialized()) StartHvd();

  double idle_hvd = -1;
  if (args_.idle_seconds > 0) {
    HvdBarrier();
    idle_hvd = IdleCpuPerSecond(args_.idle_seconds, kIdleSettleSeconds);
  }

  // Every rank's checks, peak RSS and idle figures, gathered through hvd.
  RunInfo info;
  info.failed = HvdAllreduceInt64(all_ok_ ? 0 : 1, HVD_OP_MAX, "hvd_bench.failed") != 0;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  info.peak_rss_mib =
      static_cast<double>(HvdAllreduceInt64(ru.ru_maxrss, HVD_OP_MAX, "hvd_bench.rss")) / 1024;
  std::vector<IdleLine> idle;
  if (idle_zero >= 0) {
    idle.push_back(IdleLine{planned_ == Backend::kMpi ? "MPI initialised only (zero line)"
                                                      : "raw Gloo context only (zero line)",
                            HvdGather(idle_zero, "hvd_bench.idle_zero")});
  }
  if (idle_hvd >= 0) {
    idle.push_back(IdleLine{"hvd initialised, idle after the workloads",
                            HvdGather(idle_hvd, "hvd_bench.idle_hvd")});
  }
  if (args_.idle_seconds > 0 && idle_zero < 0) {
    notes_.push_back("idle zero line skipped: no raw context");
  }

  if (rank_ == 0) {
    char header[256];
    std::snprintf(header, sizeof header,
                  "hvd_bench: hvd %s, backend %s (hvd_mpi_enabled=%d, hvd_gloo_enabled=%d), "
                  "np=%d, rounds=%d",
                  hvd_version(), BackendName(planned_), hvd_mpi_enabled(), hvd_gloo_enabled(),
                  size_, args_.rounds);
    info.header = header;
    info.knobs = {"HVD_FUSION_THRESHOLD=" + Knob("FUSION_THRESHOLD") +
                      "  HVD_CYCLE_TIME=" + Knob("CYCLE_TIME"),
                  "HVD_ALLREDUCE_CHUNK_BYTES=" + Knob("ALLREDUCE_CHUNK_BYTES") +
                      " (raw chunked pattern: " +
                      (chunk_bytes_ > 0 ? FormatBytes(chunk_bytes_) + " pieces" : "off") +
                      (chunks_.cache_elems > 0
                           ? "; cache-sized: " + FormatBytes(chunks_.cache_elems * 4) + " pieces"
                           : "") +
                      ")"};
    if (args_.shared_buffers) {
      notes_.push_back("every buffer from hvd_alloc_shared (--shared-buffers), raw patterns too");
    } else if (args_.huge_pages) {
      notes_.push_back("every buffer in huge pages where the kernel grants them (--huge-pages)");
    }
    info.notes = notes_;
    info.idle_seconds = args_.idle_seconds;
    info.idle_settle_seconds = kIdleSettleSeconds;
    PrintReport(stdout, info, rows_, idle);
    std::fflush(stdout);
    if (!args_.csv.empty() && !WriteCsv(args_.csv, rows_)) {
      std::fprintf(stderr, "hvd_bench[rank 0]: cannot write '%s'\n", args_.csv.c_str());
    }
  }
  Check(hvd_shutdown(), "hvd_shutdown");
  return info.failed ? 1 : 0;
}

}  // namespace
}  // namespace hvdbench

int main(int argc, char** argv) {
  using namespace hvdbench;
  // Everything that can be refused is refused before anything starts.
  const Args args = ParseArgs(argc, argv);
  if (args.help) {
    Usage(stdout);
    return 0;
  }
  RequestBackend(args.backend);
  const std::vector<Workload> workloads = BuildWorkloads(args);
  const int64_t chunk_bytes = ChunkBytesFromEnv();
  // With the knob unset, hvd's MPI allreduce goes in cache-sized pieces
  // inside one host and 4 MiB ones across hosts: the raw MPI patterns
  // include both. (Gloo ignores the knob; on Gloo cache-sized pieces are
  // 6-8x slower, so that pattern would only lengthen the run.)
  const Backend planned = PlanBackend();
  const int64_t cache_chunk_bytes =
      ChunkKnobSet() || planned != Backend::kMpi ? 0 : CacheChunkBytes();
  Bench bench(args, planned, chunk_bytes, cache_chunk_bytes);
  return bench.Run(workloads);
}
