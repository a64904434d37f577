// hvd_bench: runs the fixed workloads of shared/bench/WORKLOADS.md through
// hvd and, in the same launch, through raw MPI_Allreduce (when hvd runs on
// the MPI backend) or raw gloo::allreduce on a second Gloo context (when hvd
// runs on Gloo under hvdrun), and prints one table on rank 0.
//
//   mpirun -np 2 hvd_bench / hvdrun -np 2 hvd_bench [--workloads W1,W2,W2b,W3,W4] [--iters N]
//                          [--warmup N] [--csv FILE] [--shapes FILE]...
//
// One iteration of a workload: submit an async allreduce (SUM, float32) for
// every tensor in file order, then wait for all of them. Inputs are rank+1,
// so the result is exactly n(n+1)/2 everywhere; it is checked on the first
// iteration of every implementation. Exit code: 0 when every check passed.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hvd/hvd.h"

#ifdef HVD_BENCH_HAVE_MPI
#include <mpi.h>
#endif

#ifdef HVD_BENCH_HAVE_GLOO
#include "tools/hvd_bench/gloo_raw.h"
#endif

#ifndef HVD_BENCH_SHAPES_DIR
#define HVD_BENCH_SHAPES_DIR "."
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Workload {
  std::string name;
  std::vector<int64_t> counts;  // elements per tensor, in submission order
  int iters = 10;
  int warmup = 2;
  int64_t total() const {
    int64_t t = 0;
    for (int64_t c : counts) t += c;
    return t;
  }
};

struct Row {
  std::string workload;
  std::string impl;
  double median_ms = 0;
  double busbw_gbs = 0;
  double ratio = -1;  // < 0: no raw baseline to compare with
  bool ok = true;
};

struct Args {
  std::vector<std::string> workloads{"W1", "W2", "W2b", "W3", "W4"};
  int iters = -1;
  int warmup = -1;
  std::string csv;
  std::string shapes_dir = HVD_BENCH_SHAPES_DIR;
  std::string w2_shapes;
  std::string w2b_shapes;
  std::vector<std::string> extra_shapes;
  bool raw = true;        // run the raw baselines
  int gap = 0;            // float elements between consecutive tensors
  bool in_place = false;  // outputs are the inputs
};

int g_rank = 0;
int g_size = 1;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "hvd_bench[rank %d]: %s\n", g_rank, msg.c_str());
  std::fflush(stderr);
#ifdef HVD_BENCH_HAVE_MPI
  if (hvd_mpi_enabled()) MPI_Abort(MPI_COMM_WORLD, 2);
#endif
  std::_Exit(2);
}

void Check(hvd_status s, const char* what) {
  if (s != HVD_OK) {
    Die(std::string(what) + ": " + hvd_status_string(s) + " (" + hvd_last_error() + ")");
  }
}

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: hvd_bench [options]   (launch with mpirun or hvdrun)\n"
               "  --workloads LIST   comma-separated subset of W1,W2,W2b,W3,W4 (default all)\n"
               "  --iters N          timed iterations per workload (default: per workload)\n"
               "  --warmup N         warm-up iterations per workload (default: per workload)\n"
               "  --csv FILE         also write rows workload,impl,median_ms,busbw_gbs,ratio\n"
               "  --shapes FILE      extra workload from a shape file (repeatable), named\n"
               "                     after the file\n"
               "  --shapes-dir DIR   where resnet50_grads.txt/vgg16_grads.txt are\n"
               "                     (default %s)\n"
               "  --w2-shapes FILE   shape file of W2 (default DIR/resnet50_grads.txt)\n"
               "  --w2b-shapes FILE  shape file of W2b (default DIR/vgg16_grads.txt)\n"
               "  --no-raw           skip the raw baselines (peak RSS is then hvd's alone)\n"
               "  --gap N            leave N floats between tensors (default 0: tensors are\n"
               "                     adjacent views of one buffer, which hvd reduces without\n"
               "                     fusion-buffer copies; N > 0 measures the copying path)\n"
               "  --in-place         reduce each tensor in place (one buffer, as a training\n"
               "                     step does; implies --no-raw)\n"
               "  --backend B        mpi, gloo or auto (default: what the launcher gives,\n"
               "                     MPI under mpirun, Gloo under hvdrun); sets\n"
               "                     HVD_CONTROLLER and HVD_CPU_OPERATIONS; the raw\n"
               "                     baseline follows it (raw MPI or raw Gloo)\n"
               "  --help             this text\n"
               "Shape file: one tensor per line, dims separated by spaces, '#' comments.\n"
               "Knobs read by hvd: HVD_FUSION_THRESHOLD, HVD_CYCLE_TIME (and others).\n",
               HVD_BENCH_SHAPES_DIR);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int ParsePositive(const std::string& flag, const char* v, int min) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < min || x > 100000000) {
    Die("bad value for " + flag + ": '" + v + "'");
  }
  return static_cast<int>(x);
}

// Returns false when --help was asked for.
bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Die("missing value for " + f);
      return argv[++i];
    };
    if (f == "--help" || f == "-h") {
      return false;
    } else if (f == "--workloads") {
      a->workloads = Split(value(), ',');
    } else if (f == "--iters") {
      a->iters = ParsePositive(f, value(), 1);
    } else if (f == "--warmup") {
      a->warmup = ParsePositive(f, value(), 0);
    } else if (f == "--csv") {
      a->csv = value();
    } else if (f == "--shapes") {
      a->extra_shapes.push_back(value());
    } else if (f == "--shapes-dir") {
      a->shapes_dir = value();
    } else if (f == "--w2-shapes") {
      a->w2_shapes = value();
    } else if (f == "--w2b-shapes") {
      a->w2b_shapes = value();
    } else if (f == "--no-raw") {
      a->raw = false;
    } else if (f == "--gap") {
      a->gap = ParsePositive(f, value(), 0);
    } else if (f == "--in-place") {
      a->in_place = true;
      a->raw = false;
    } else if (f == "--backend") {
      value();  // acted on before hvd_init (RequestBackend)
    } else {
      if (g_rank == 0) Usage(stderr);
      Die("unknown option '" + f + "'");
    }
  }
  return true;
}

std::vector<int64_t> ReadShapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die("cannot open shape file '" + path + "'");
  std::vector<int64_t> counts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream ls(line);
    int64_t n = 1, d = 0;
    int dims = 0;
    while (ls >> d) {
      if (d < 0) Die(path + ":" + std::to_string(lineno) + ": negative dimension");
      n *= d;
      ++dims;
    }
    if (!ls.eof()) Die(path + ":" + std::to_string(lineno) + ": not a list of integers");
    if (dims > 0) counts.push_back(n);
  }
  if (counts.empty()) Die("shape file '" + path + "' has no tensors");
  return counts;
}

std::string BaseName(const std::string& path) {
  std::string b = path.substr(path.find_last_of('/') + 1);
  auto dot = b.find_last_of('.');
  if (dot != std::string::npos && dot > 0) b.erase(dot);
  return b;
}

std::vector<Workload> BuildWorkloads(const Args& a) {
  std::vector<Workload> out;
  const std::string dir = a.shapes_dir;
  for (const std::string& w : a.workloads) {
    Workload wl;
    wl.name = w;
    if (w == "W1") {
      wl.counts = {64 * 1024 * 1024 / 4};
      wl.iters = 20;
      wl.warmup = 3;
    } else if (w == "W2") {
      wl.counts = ReadShapes(a.w2_shapes.empty() ? dir + "/resnet50_grads.txt" : a.w2_shapes);
      wl.iters = 20;
      wl.warmup = 3;
    } else if (w == "W2b") {
      wl.counts = ReadShapes(a.w2b_shapes.empty() ? dir + "/vgg16_grads.txt" : a.w2b_shapes);
      wl.iters = 5;
      wl.warmup = 1;
    } else if (w == "W3") {
      wl.counts = {256};
      wl.iters = 1000;
      wl.warmup = 50;
    } else if (w == "W4") {
      wl.counts.assign(1000, 256);
      wl.iters = 50;
      wl.warmup = 5;
    } else {
      Die("unknown workload '" + w + "' (W1,W2,W2b,W3,W4; use --shapes FILE for others)");
    }
    out.push_back(std::move(wl));
  }
  for (const std::string& f : a.extra_shapes) {
    Workload wl;
    wl.name = BaseName(f);
    wl.counts = ReadShapes(f);
    int64_t bytes = wl.total() * 4;
    wl.iters = bytes > (256 << 20) ? 5 : bytes > (8 << 20) ? 20 : 50;
    wl.warmup = bytes > (256 << 20) ? 1 : 3;
    out.push_back(std::move(wl));
  }
  for (Workload& wl : out) {
    if (a.iters > 0) wl.iters = a.iters;
    if (a.warmup >= 0) wl.warmup = a.warmup;
  }
  return out;
}

// One contiguous input and one contiguous output buffer per workload (or
// the input alone, in place); each tensor is a view into them (`gap` floats
// apart), so the "one call over all bytes" baseline uses the same memory.
struct Buffers {
  std::vector<float> in, out;
  float* dst = nullptr;  // out.data(), or in.data() in place
  std::vector<int64_t> offset, shape, counts;
  std::vector<DLTensor> tin, tout;
  std::vector<std::string> names;

  Buffers(const Workload& wl, int gap, bool in_place) : counts(wl.counts) {
    const size_t n = wl.counts.size();
    const int64_t total = wl.total() + static_cast<int64_t>(gap) * static_cast<int64_t>(n);
    in.assign(static_cast<size_t>(total), static_cast<float>(g_rank + 1));
    if (!in_place) out.assign(static_cast<size_t>(total), 0.0f);
    dst = in_place ? in.data() : out.data();
    offset.resize(n);
    shape.resize(n);
    tin.resize(n);
    tout.resize(n);
    names.resize(n);
    int64_t off = 0;
    for (size_t i = 0; i < n; ++i) {
      offset[i] = off;
      shape[i] = wl.counts[i];
      off += wl.counts[i] + gap;
    }
    for (size_t i = 0; i < n; ++i) {
      DLTensor t{};
      t.device = DLDevice{kDLCPU, 0};
      t.ndim = 1;
      t.dtype = DLDataType{kDLFloat, 32, 1};
      t.shape = &shape[i];
      t.strides = nullptr;
      t.byte_offset = 0;
      t.data = in.data() + offset[i];
      tin[i] = t;
      t.data = dst + offset[i];
      tout[i] = t;
      names[i] = wl.name + "." + std::to_string(i);
    }
  }

  // Exact check: every output element of every tensor is sum_{r<n}(r+1).
  bool Verify() const {
    const float expect = static_cast<float>(g_size) * (g_size + 1) / 2.0f;
    for (size_t t = 0; t < counts.size(); ++t) {
      for (int64_t i = offset[t]; i < offset[t] + counts[t]; ++i) {
        if (dst[i] != expect) {
          std::fprintf(stderr, "hvd_bench[rank %d]: element %lld is %g, expected %g\n", g_rank,
                       static_cast<long long>(i), static_cast<double>(dst[i]),
                       static_cast<double>(expect));
          return false;
        }
      }
    }
    return true;
  }
  void ClearOut() {
    if (out.empty()) {
      std::fill(in.begin(), in.end(), static_cast<float>(g_rank + 1));  // in place
    } else {
      std::fill(out.begin(), out.end(), 0.0f);
    }
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Large workloads align the ranks before every iteration so that one rank's
// late start is not counted; small ones run back to back.
bool AlignEachIteration(const Workload& wl) {
  return wl.total() * 4 >= (1 << 20);
}

// Runs warm-up + timed iterations of `iteration`, checking the result of the
// first one. Returns rank 0's per-iteration median in ms.
template <typename Iter, typename Barrier>
double TimeIt(const Workload& wl, Buffers& b, bool* ok, Iter iteration, Barrier barrier) {
  std::vector<double> times;
  times.reserve(static_cast<size_t>(wl.iters));
  const bool align = AlignEachIteration(wl);
  barrier();
  b.ClearOut();
  for (int it = 0; it < wl.warmup + wl.iters; ++it) {
    if (align) barrier();
    auto t0 = Clock::now();
    iteration();
    auto t1 = Clock::now();
    if (it == 0) *ok = b.Verify() && *ok;
    if (it >= wl.warmup)
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Median(times);
}

void HvdBarrier() {
  Check(hvd_barrier(0), "hvd_barrier");
}

void HvdIteration(Buffers& b, std::vector<hvd_handle>& handles) {
  const size_t n = b.tin.size();
  for (size_t i = 0; i < n; ++i) {
    Check(hvd_allreduce_async(b.names[i].c_str(), &b.tin[i], &b.tout[i], HVD_OP_SUM, nullptr,
                              &handles[i]),
          "hvd_allreduce_async");
  }
  for (size_t i = 0; i < n; ++i) {
    Check(hvd_wait(handles[i], 300000), "hvd_wait");
    Check(hvd_release(handles[i]), "hvd_release");
  }
}

// 64-bit MAX/SUM over ranks through hvd (works on every backend).
int64_t HvdAllreduceInt64(int64_t v, hvd_reduce_op op, const char* name) {
  int64_t in = v, out = 0, shape = 1;
  DLTensor ti{};
  ti.device = DLDevice{kDLCPU, 0};
  ti.ndim = 1;
  ti.dtype = DLDataType{kDLInt, 64, 1};
  ti.shape = &shape;
  DLTensor to = ti;
  ti.data = &in;
  to.data = &out;
  hvd_handle h;
  Check(hvd_allreduce_async(name, &ti, &to, op, nullptr, &h), "hvd_allreduce_async(int64)");
  Check(hvd_wait(h, 300000), "hvd_wait(int64)");
  Check(hvd_release(h), "hvd_release");
  return out;
}

double BusBw(int64_t bytes, double ms) {
  if (ms <= 0 || g_size < 2) return 0;
  return static_cast<double>(bytes) / (ms * 1e-3) * 2.0 * (g_size - 1) / g_size / 1e9;
}

std::string Knob(const char* suffix) {
  std::string hvd = std::string("HVD_") + suffix;
  std::string horovod = std::string("HOROVOD_") + suffix;
  if (const char* v = std::getenv(hvd.c_str())) return v;
  if (const char* v = std::getenv(horovod.c_str())) return std::string(v) + " (HOROVOD_)";
  return "unset (default)";
}

std::string FormatMs(double ms) {
  char buf[32];
  if (ms < 0.1) {
    std::snprintf(buf, sizeof buf, "%.4f", ms);
  } else if (ms < 10) {
    std::snprintf(buf, sizeof buf, "%.3f", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", ms);
  }
  return buf;
}

std::string FormatBytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  }
  return buf;
}

// --backend acts before hvd_init, through the variables hvd reads there.
// Returns the backend asked for ("auto" when none); exits on a bad value.
std::string RequestBackend(int argc, char** argv) {
  std::string backend = "auto";
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--backend")) backend = argv[i + 1];
  }
  if (backend != "auto" && backend != "mpi" && backend != "gloo") {
    std::fprintf(stderr, "hvd_bench: bad value for --backend: '%s' (mpi, gloo or auto)\n",
                 backend.c_str());
    std::exit(2);
  }
  if (backend != "auto") {
    setenv("HVD_CONTROLLER", backend.c_str(), 1);
    setenv("HVD_CPU_OPERATIONS", backend.c_str(), 1);
  }
  return backend;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  // Parse before hvd_init so --help works without a launcher.
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      Usage(stdout);
      return 0;
    }
  }
  const std::string backend = RequestBackend(argc, argv);
  Check(hvd_init(), "hvd_init");
  g_rank = hvd_rank();
  g_size = hvd_size();
  if (!ParseArgs(argc, argv, &args)) {
    if (g_rank == 0) Usage(stdout);
    hvd_shutdown();
    return 0;
  }
  const std::vector<Workload> workloads = BuildWorkloads(args);

  const bool on_mpi = hvd_mpi_enabled() == 1;
  const bool on_gloo = hvd_gloo_enabled() == 1;
  if ((backend == "mpi" && !on_mpi) || (backend == "gloo" && !on_gloo)) {
    Die("--backend " + backend + " asked for, but hvd runs on " + (on_mpi ? "MPI" : "Gloo"));
  }
  bool raw_mpi = false;
  std::string raw_note;
#ifdef HVD_BENCH_HAVE_MPI
  if (!args.raw) {
    raw_note = "raw baselines skipped (--no-raw)";
  } else if (on_mpi) {
    if (hvd_mpi_threads_supported()) {
      raw_mpi = true;
    } else {
      raw_note =
          "raw MPI baseline skipped: MPI is not MPI_THREAD_MULTIPLE, and hvd's "
          "background thread uses MPI too";
    }
  } else {
    raw_note = "raw MPI baseline skipped: hvd is not on the MPI backend";
  }
#else
  raw_note = "raw MPI baseline skipped: built without MPI";
#endif
#ifdef HVD_BENCH_HAVE_GLOO
  std::unique_ptr<hvdbench::RawGloo> raw_gloo;
  if (on_gloo && !on_mpi && args.raw) {
    std::string why;
    raw_gloo = hvdbench::RawGloo::Create(g_rank, g_size, 300.0, &why);
    // Every rank must agree, or some would wait in Gloo calls for ever.
    const int64_t missing = HvdAllreduceInt64(raw_gloo ? 0 : 1, HVD_OP_MAX, "hvd_bench.raw_gloo");
    if (missing) {
      raw_gloo.reset();
      raw_note = "raw Gloo baseline skipped: " + (why.empty() ? "failed on another rank" : why);
    } else {
      raw_note.clear();
    }
  }
#else
  if (on_gloo && !on_mpi) raw_note += "; raw Gloo baseline skipped: built without Gloo";
#endif

  std::vector<Row> rows;
  bool all_ok = true;
  for (const Workload& wl : workloads) {
    Buffers b(wl, args.gap, args.in_place);
    const int64_t bytes = wl.total() * 4;
    std::vector<hvd_handle> handles(wl.counts.size());

    Row hv{wl.name, "hvd"};
    hv.median_ms = TimeIt(
        wl, b, &hv.ok, [&] { HvdIteration(b, handles); }, HvdBarrier);
    hv.busbw_gbs = BusBw(bytes, hv.median_ms);
    std::vector<Row> wl_rows{hv};

#ifdef HVD_BENCH_HAVE_MPI
    if (raw_mpi) {
      auto mpi_barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
      if (wl.counts.size() > 1) {
        Row per{wl.name, "raw MPI per tensor"};
        per.median_ms = TimeIt(
            wl, b, &per.ok,
            [&] {
              for (size_t i = 0; i < wl.counts.size(); ++i) {
                MPI_Allreduce(b.in.data() + b.offset[i], b.out.data() + b.offset[i],
                              static_cast<int>(wl.counts[i]), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
              }
            },
            mpi_barrier);
        per.busbw_gbs = BusBw(bytes, per.median_ms);
        wl_rows.push_back(per);
      }
      Row one{wl.name, wl.counts.size() > 1 ? "raw MPI one call" : "raw MPI"};
      one.median_ms = TimeIt(
          wl, b, &one.ok,
          [&] {
            MPI_Allreduce(b.in.data(), b.out.data(), static_cast<int>(b.in.size()), MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD);
          },
          mpi_barrier);
      one.busbw_gbs = BusBw(bytes, one.median_ms);
      wl_rows.push_back(one);
    }
#endif
#ifdef HVD_BENCH_HAVE_GLOO
    if (raw_gloo) {
      // Same bytes, same buffers; gloo::allreduce is blocking, so "per
      // tensor" is one call after another, as raw MPI per tensor.
      auto gloo_barrier = [&] { raw_gloo->Barrier(); };
      auto gloo_call = [&](const float* in, float* out, int64_t n) {
        try {
          raw_gloo->AllreduceSum(in, out, static_cast<size_t>(n));
        } catch (const std::exception& e) {
          Die(std::string("raw gloo::allreduce: ") + e.what());
        }
      };
      if (wl.counts.size() > 1) {
        Row per{wl.name, "raw Gloo per tensor"};
        per.median_ms = TimeIt(
            wl, b, &per.ok,
            [&] {
              for (size_t i = 0; i < wl.counts.size(); ++i) {
                gloo_call(b.in.data() + b.offset[i], b.out.data() + b.offset[i], wl.counts[i]);
              }
            },
            gloo_barrier);
        per.busbw_gbs = BusBw(bytes, per.median_ms);
        wl_rows.push_back(per);
      }
      Row one{wl.name, wl.counts.size() > 1 ? "raw Gloo one call" : "raw Gloo"};
      one.median_ms = TimeIt(
          wl, b, &one.ok,
          [&] { gloo_call(b.in.data(), b.out.data(), static_cast<int64_t>(b.in.size())); },
          gloo_barrier);
      one.busbw_gbs = BusBw(bytes, one.median_ms);
      wl_rows.push_back(one);
    }
#endif
    double best_raw = -1;
    for (size_t i = 1; i < wl_rows.size(); ++i) {
      if (best_raw < 0 || wl_rows[i].median_ms < best_raw) best_raw = wl_rows[i].median_ms;
    }
    for (Row& r : wl_rows) {
      if (best_raw > 0) r.ratio = r.median_ms / best_raw;
      all_ok = all_ok && r.ok;
      rows.push_back(r);
    }
    if (g_rank == 0) {
      std::fprintf(stderr, "hvd_bench: %s done (%zu tensors, %s, %d+%d iterations)\n",
                   wl.name.c_str(), wl.counts.size(), FormatBytes(bytes).c_str(), wl.warmup,
                   wl.iters);
    }
  }

  // Every rank's checks and peak RSS, gathered through hvd itself.
  const int64_t failed = HvdAllreduceInt64(all_ok ? 0 : 1, HVD_OP_MAX, "hvd_bench.failed");
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const int64_t rss_kib = static_cast<int64_t>(ru.ru_maxrss);
  const int64_t max_rss = HvdAllreduceInt64(rss_kib, HVD_OP_MAX, "hvd_bench.rss");

  if (g_rank == 0) {
    std::printf("hvd_bench: hvd %s, backend %s (hvd_mpi_enabled=%d, hvd_gloo_enabled=%d), np=%d\n",
                hvd_version(),
                on_mpi    ? "MPI"
                : on_gloo ? "Gloo"
                          : "?",
                hvd_mpi_enabled(), hvd_gloo_enabled(), g_size);
    std::printf("HVD_FUSION_THRESHOLD=%s  HVD_CYCLE_TIME=%s\n", Knob("FUSION_THRESHOLD").c_str(),
                Knob("CYCLE_TIME").c_str());
    if (!raw_note.empty()) std::printf("note: %s\n", raw_note.c_str());
    std::printf(
        "median over the timed iterations; busbw = bytes/time * 2(n-1)/n; ratio = "
        "time / best raw time\n\n");
    std::printf("%-10s %-20s %12s %12s %8s %6s\n", "workload", "impl", "median_ms", "busbw_GB/s",
                "ratio", "check");
    for (const Row& r : rows) {
      char ratio[32];
      if (r.ratio > 0) {
        std::snprintf(ratio, sizeof ratio, "%.2fx", r.ratio);
      } else {
        std::snprintf(ratio, sizeof ratio, "-");
      }
      std::printf("%-10s %-20s %12s %12.2f %8s %6s\n", r.workload.c_str(), r.impl.c_str(),
                  FormatMs(r.median_ms).c_str(), r.busbw_gbs, ratio, r.ok ? "ok" : "FAIL");
    }
    std::printf("\npeak RSS (max over ranks): %.1f MiB\n", static_cast<double>(max_rss) / 1024);
    std::printf("correctness: %s\n", failed ? "FAILED on at least one rank" : "all checks passed");
    std::fflush(stdout);

    if (!args.csv.empty()) {
      FILE* f = std::fopen(args.csv.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "hvd_bench: cannot write '%s'\n", args.csv.c_str());
      } else {
        std::fprintf(f, "workload,impl,median_ms,busbw_gbs,ratio\n");
        for (const Row& r : rows) {
          std::fprintf(f, "%s,%s,%.6f,%.4f,", r.workload.c_str(), r.impl.c_str(), r.median_ms,
                       r.busbw_gbs);
          if (r.ratio > 0) std::fprintf(f, "%.4f", r.ratio);
          std::fprintf(f, "\n");
        }
        std::fclose(f);
      }
    }
  }
  Check(hvd_shutdown(), "hvd_shutdown");
  return failed ? 1 : 0;
}
