#include "tools/hvd_bench/options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "hvd/hvd.h"
#include "tools/hvd_bench/fail.h"

#ifndef HVD_BENCH_SHAPES_DIR
#define HVD_BENCH_SHAPES_DIR "."
#endif

namespace hvdbench {
namespace {

constexpr double kDefaultIdleSeconds = 3.0;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int ParseInt(const std::string& flag, const char* v, int min) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < min || x > 100000000) {
    Die("bad value for " + flag + ": '" + v + "' (an integer >= " + std::to_string(min) + ")");
  }
  return static_cast<int>(x);
}

bool ParseSeconds(const char* v, double* out) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !(x > 0) || x > 3600) return false;
  *out = x;
  return true;
}

// HVD_<suffix>, else HOROVOD_<suffix> (hvd reads both, HVD_ first).
const char* GetKnob(const char* suffix, bool* horovod = nullptr) {
  if (horovod) *horovod = false;
  if (const char* v = std::getenv((std::string("HVD_") + suffix).c_str())) return v;
  if (horovod) *horovod = true;
  return std::getenv((std::string("HOROVOD_") + suffix).c_str());
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool LaunchedByMpi() {  // as core/backends/mpi/mpi_backend.cc decides
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
         std::getenv("PMIX_RANK") || std::getenv("MPI_LOCALNRANKS");
}

}  // namespace

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: hvd_bench [options]   (launch with mpirun or hvdrun)\n"
               "  --workloads LIST   comma-separated, in order; W1,W2,W2b,W3,W4,W5,W6 (default\n"
               "                     all) or shape-file paths (an entry with a '/' or ending in\n"
               "                     .txt; named after the file), to benchmark your own model\n"
               "  --rounds N         rounds (default 3); each round runs every implementation\n"
               "                     once: raw patterns before hvd_init, hvd, raw patterns with\n"
               "                     hvd initialised and idle, then hvd_shutdown. Figures are\n"
               "                     the median over rounds of each round's median, with the\n"
               "                     range (min-max) over rounds\n"
               "  --iters N          timed iterations per round (default: per workload)\n"
               "  --warmup N         warm-up iterations per round (default: per workload)\n"
               "  --idle [SECONDS]   CPU used per rank per second while idle (default %g s):\n"
               "                     with only the raw MPI/Gloo context, and with hvd\n"
               "                     initialised after the workloads\n"
               "  --csv FILE         also write every row: workload,impl,median_ms,min_ms,\n"
               "                     max_ms,busbw_gbs,ratio_to_best_raw\n"
               "  --shapes FILE      extra workload from a shape file (repeatable)\n"
               "  --shapes-dir DIR   where the shape files of W2, W2b, W5, W6 are\n"
               "                     (default %s)\n"
               "  --w2-shapes FILE   shape file of W2 (default DIR/resnet50_grads.txt)\n"
               "  --w2b-shapes FILE  shape file of W2b (default DIR/vgg16_grads.txt)\n"
               "  --no-raw           skip the raw baselines (peak RSS is then hvd's alone)\n"
               "  --gap N            leave N floats between tensors (default 0: tensors are\n"
               "                     adjacent views of one buffer, which hvd reduces without\n"
               "                     fusion-buffer copies; N > 0 measures the copying path)\n"
               "  --in-place         reduce each tensor in place (one buffer, as a training\n"
               "                     step does; implies --no-raw)\n"
               "  --paired           also time hvd in place and the raw patterns in place\n"
               "                     iteration by iteration, in turn, with hvd initialised:\n"
               "                     rows '(paired)', whose ratio is to the best paired raw\n"
               "                     pattern, measured on the same machine at the same time\n"
               "  --shared-buffers   every buffer from hvd_alloc_shared (memory the other\n"
               "                     ranks of the host map), for hvd and the raw patterns\n"
               "                     alike: hvd then reduces between the ranks' buffers\n"
               "  --huge-pages       every buffer mmap'd with MADV_HUGEPAGE, as numpy's large\n"
               "                     arrays are (and any heap buffer where transparent huge\n"
               "                     pages are 'always'): Open MPI's single-copy reads of\n"
               "                     the peer's buffer pin 2 MiB pages instead of 4 KiB ones\n"
               "  --backend B        mpi, gloo or auto (default: what the launcher gives,\n"
               "                     MPI under mpirun, Gloo under hvdrun); sets\n"
               "                     HVD_CONTROLLER and HVD_CPU_OPERATIONS; the raw\n"
               "                     baseline follows it (raw MPI or raw Gloo)\n"
               "  --help             this text\n"
               "Raw patterns: one allreduce per tensor, one over the concatenated bytes, and\n"
               "that concatenation in HVD_ALLREDUCE_CHUNK_BYTES pieces (default 4 MiB) and,\n"
               "on MPI with that knob unset, in cache-sized pieces (half the L2 cache, 256 KiB to\n"
               "4 MiB: hvd's own choice inside one host), and the last three again in place on\n"
               "the output (MPI_IN_PLACE: what a user after the best raw figure writes); the\n"
               "fastest is the best raw figure, and ratio = time / best raw time (before\n"
               "hvd_init). hvd is initialised and shut down once per round and workload, so\n"
               "HVD_TIMELINE and HVD_AUTOTUNE_LOG hold the last one (use --rounds 1).\n"
               "Shape file: one tensor per line, dims separated by spaces, '#' comments.\n"
               "Knobs read by hvd: HVD_FUSION_THRESHOLD, HVD_CYCLE_TIME (and others).\n",
               kDefaultIdleSeconds, HVD_BENCH_SHAPES_DIR);
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  a.shapes_dir = HVD_BENCH_SHAPES_DIR;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Die("missing value for " + f);
      return argv[++i];
    };
    if (f == "--help" || f == "-h") {
      a.help = true;
    } else if (f == "--workloads") {
      a.workloads = Split(value(), ',');
      if (a.workloads.empty()) Die("--workloads: empty list");
    } else if (f == "--rounds") {
      a.rounds = ParseInt(f, value(), 1);
    } else if (f == "--iters") {
      a.iters = ParseInt(f, value(), 1);
    } else if (f == "--warmup") {
      a.warmup = ParseInt(f, value(), 0);
    } else if (f == "--idle") {
      a.idle_seconds = kDefaultIdleSeconds;
      // The value is optional: take the next word when it is not an option.
      if (i + 1 < argc && argv[i + 1][0] != '-') {
        if (!ParseSeconds(argv[++i], &a.idle_seconds)) {
          Die(std::string("bad value for --idle: '") + argv[i] + "' (seconds, > 0 and <= 3600)");
        }
      }
    } else if (f == "--csv") {
      a.csv = value();
    } else if (f == "--shapes") {
      a.extra_shapes.push_back(value());
    } else if (f == "--shapes-dir") {
      a.shapes_dir = value();
    } else if (f == "--w2-shapes") {
      a.w2_shapes = value();
    } else if (f == "--w2b-shapes") {
      a.w2b_shapes = value();
    } else if (f == "--no-raw") {
      a.raw = false;
    } else if (f == "--gap") {
      a.gap = ParseInt(f, value(), 0);
    } else if (f == "--in-place") {
      a.in_place = true;
      a.raw = false;
    } else if (f == "--shared-buffers") {
      a.shared_buffers = true;
    } else if (f == "--huge-pages") {
      a.huge_pages = true;
    } else if (f == "--paired") {
      a.paired = true;
    } else if (f == "--backend") {
      a.backend = value();
      if (a.backend != "auto" && a.backend != "mpi" && a.backend != "gloo") {
        Die("bad value for --backend: '" + a.backend + "' (mpi, gloo or auto)");
      }
    } else {
      const std::string rank = MessageRank();
      if (rank == "0" || rank == "?") Usage(stderr);  // once per launch
      Die("unknown option '" + f + "'");
    }
  }
  if (a.shared_buffers && a.huge_pages) Die("--shared-buffers and --huge-pages exclude each other");
  return a;
}

const char* BackendName(Backend b) {
  return b == Backend::kMpi ? "MPI" : "Gloo";
}

void RequestBackend(const std::string& backend) {
  if (backend == "auto") return;
  setenv("HVD_CONTROLLER", backend.c_str(), 1);
  setenv("HVD_CPU_OPERATIONS", backend.c_str(), 1);
}

Backend PlanBackend() {
  // As core/runtime/runtime.cc chooses: CPU operations, else the
  // controller, else the first built backend whose launcher started us.
  for (const char* suffix : {"CPU_OPERATIONS", "CONTROLLER"}) {
    const char* v = GetKnob(suffix);
    const std::string s = v ? Lower(v) : "";
    if (s == "mpi") return Backend::kMpi;
    if (s == "gloo") return Backend::kGloo;
  }
  if (hvd_mpi_built() && LaunchedByMpi()) return Backend::kMpi;
  if (hvd_gloo_built() && std::getenv("HVD_RENDEZVOUS_ADDR")) return Backend::kGloo;
  return hvd_mpi_built() ? Backend::kMpi : Backend::kGloo;
}

int64_t ChunkBytesFromEnv() {
  bool horovod = false;
  const char* v = GetKnob("ALLREDUCE_CHUNK_BYTES", &horovod);
  if (v == nullptr) return 4LL * 1024 * 1024;  // hvd's default (core/common/config.h)
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < 0) {
    Die(std::string("invalid ") + (horovod ? "HOROVOD_" : "HVD_") + "ALLREDUCE_CHUNK_BYTES='" + v +
        "': expected an integer >= 0");
  }
  return x;
}

bool ChunkKnobSet() {
  bool horovod = false;
  return GetKnob("ALLREDUCE_CHUNK_BYTES", &horovod) != nullptr;
}

int64_t CacheChunkBytes() {
  int64_t l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 <= 0) l2 = int64_t{1} << 20;
  return std::min<int64_t>(std::max<int64_t>(l2 / 2, int64_t{256} << 10), int64_t{4} << 20);
}

std::string Knob(const char* suffix) {
  bool horovod = false;
  const char* v = GetKnob(suffix, &horovod);
  if (v == nullptr) return "unset (default)";
  return horovod ? std::string(v) + " (HOROVOD_)" : std::string(v);
}

}  // namespace hvdbench
