// The raw baselines: the same bytes reduced by calling MPI or Gloo
// directly, in the three patterns a user could write by hand. The fastest
// of them is "best raw", the figure hvd is measured against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/hvd_bench/buffers.h"
#include "tools/hvd_bench/options.h"

namespace hvdbench {

// A communicator of its own, created before hvd_init: MPI_COMM_WORLD for
// MPI (the bench initialises MPI), a second Gloo context for Gloo.
class RawComm {
 public:
  virtual ~RawComm() = default;
  virtual Backend backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out[i] = sum over ranks of in[i], float32; blocking. Dies on an error.
  virtual void AllreduceSum(const float* in, float* out, int64_t count) = 0;
  virtual void Barrier() = 0;
  // Whether raw calls may run while hvd's background thread is up (and
  // *why not).
  virtual bool UsableBesideHvd(std::string* why) const = 0;
};

// Null, with *why, when the raw context cannot be created (for example the
// launcher is not the backend's, or the build lacks the library).
std::unique_ptr<RawComm> CreateRawComm(Backend backend, std::string* why);

enum class RawPattern {
  kPerTensor,  // one allreduce per tensor, in submission order
  kOneCall,    // one allreduce over the concatenated bytes
  kChunked,    // the concatenation in HVD_ALLREDUCE_CHUNK_BYTES pieces
  // ... in cache-sized pieces: half the L2 cache within [256 KiB, 4 MiB],
  // hvd's own choice inside one host unless HVD_ALLREDUCE_CHUNK_BYTES is set
  kChunkedCache,
  // The last three again in place (MPI_IN_PLACE on the output buffer, which
  // starts as the input): what a user who wants the best raw figure writes.
  kOneCallInPlace,
  kChunkedInPlace,
  kChunkedCacheInPlace,
};
bool InPlace(RawPattern p);

// The piece sizes of the chunked patterns, in floats (0: that pattern is off).
struct Chunks {
  int64_t elems = 0;
  int64_t cache_elems = 0;
};
const char* PatternName(RawPattern p);

// The patterns that differ on this workload: per tensor only with several
// tensors, each chunked one only when the concatenation is longer than its
// piece (and the cache-sized piece only when it differs from the other).
std::vector<RawPattern> PatternsFor(const Buffers& b, const Chunks& chunks);

// One iteration of pattern p on b.
void RunPattern(RawComm& comm, RawPattern p, Buffers& b, const Chunks& chunks);

}  // namespace hvdbench
