// hvd_bench's command line, and what it reads from the environment before
// hvd_init: the backend hvd will run on and HVD_ALLREDUCE_CHUNK_BYTES.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hvdbench {

struct Args {
  // Names (W1...W6) or shape-file paths, in the order they run.
  std::vector<std::string> workloads{"W1", "W2", "W2b", "W3", "W4", "W5", "W6"};
  int iters = -1;   // timed iterations per round (-1: the workload's default)
  int warmup = -1;  // warm-up iterations per round (-1: the workload's default)
  int rounds = 3;
  std::string csv;
  std::string shapes_dir;
  std::string w2_shapes;
  std::string w2b_shapes;
  std::vector<std::string> extra_shapes;  // --shapes, run after --workloads
  bool raw = true;                        // run the raw baselines
  int gap = 0;                            // float elements between consecutive tensors
  bool in_place = false;                  // outputs are the inputs
  bool paired = false;                    // also time hvd and raw iteration by iteration
  bool shared_buffers = false;            // buffers from hvd_alloc_shared
  bool huge_pages = false;                // buffers mmap'd with MADV_HUGEPAGE
  double idle_seconds = 0;                // --idle: > 0
  std::string backend = "auto";           // mpi, gloo or auto
  bool help = false;
};

void Usage(FILE* f);

// Dies with a one-line message on a bad option or value.
Args ParseArgs(int argc, char** argv);

enum class Backend { kMpi, kGloo };
const char* BackendName(Backend b);

// --backend acts through the variables hvd_init reads (HVD_CONTROLLER,
// HVD_CPU_OPERATIONS); call before anything initialises.
void RequestBackend(const std::string& backend);

// The backend hvd_init will run its CPU collectives on, worked out from the
// same variables and launcher hints hvd uses: the raw baseline has to exist
// before hvd does. main() checks the guess against hvd after hvd_init.
Backend PlanBackend();

// HVD_ALLREDUCE_CHUNK_BYTES (or HOROVOD_...), as hvd reads it; 4 MiB when
// unset, 0 = never split. Dies on a value hvd would refuse.
int64_t ChunkBytesFromEnv();
bool ChunkKnobSet();
// Half the L2 cache within [256 KiB, 4 MiB]: the rule hvd applies inside
// one host when the knob is unset (HostLocalChunkBytes in core/common/config.cc).
int64_t CacheChunkBytes();

// "VALUE", "VALUE (HOROVOD_)" or "unset (default)", for the report header.
std::string Knob(const char* suffix);

}  // namespace hvdbench
