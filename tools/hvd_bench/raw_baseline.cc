#include "tools/hvd_bench/raw_baseline.h"

#include <algorithm>

#ifdef HVD_BENCH_HAVE_MPI
#include "tools/hvd_bench/raw_mpi.h"
#endif
#ifdef HVD_BENCH_HAVE_GLOO
#include "tools/hvd_bench/gloo_raw.h"
#endif

namespace hvdbench {
namespace {

constexpr double kGlooTimeoutSeconds = 300.0;

}  // namespace

std::unique_ptr<RawComm> CreateRawComm(Backend backend, std::string* why) {
  if (backend == Backend::kMpi) {
#ifdef HVD_BENCH_HAVE_MPI
    return CreateRawMpi(why);
#else
    *why = "built without MPI";
    return nullptr;
#endif
  }
#ifdef HVD_BENCH_HAVE_GLOO
  return CreateRawGloo(kGlooTimeoutSeconds, why);
#else
  *why = "built without Gloo";
  return nullptr;
#endif
}

const char* PatternName(RawPattern p) {
  switch (p) {
    case RawPattern::kPerTensor:
      return "per tensor";
    case RawPattern::kOneCall:
      return "one call";
    case RawPattern::kChunked:
      return "chunked";
    case RawPattern::kChunkedCache:
      return "chunked, cache-sized";
  }
  return "?";
}

std::vector<RawPattern> PatternsFor(const Buffers& b, const Chunks& chunks) {
  std::vector<RawPattern> out;
  if (b.tensors() > 1) out.push_back(RawPattern::kPerTensor);
  out.push_back(RawPattern::kOneCall);
  if (chunks.elems > 0 && b.span() > chunks.elems) out.push_back(RawPattern::kChunked);
  if (chunks.cache_elems > 0 && chunks.cache_elems != chunks.elems &&
      b.span() > chunks.cache_elems) {
    out.push_back(RawPattern::kChunkedCache);
  }
  return out;
}

namespace {

void RunChunked(RawComm& comm, Buffers& b, int64_t chunk_elems) {
  for (int64_t off = 0; off < b.span(); off += chunk_elems) {
    comm.AllreduceSum(b.in() + off, b.out() + off, std::min(chunk_elems, b.span() - off));
  }
}

}  // namespace

void RunPattern(RawComm& comm, RawPattern p, Buffers& b, const Chunks& chunks) {
  switch (p) {
    case RawPattern::kPerTensor:
      for (size_t i = 0; i < b.tensors(); ++i) {
        comm.AllreduceSum(b.in() + b.offset(i), b.out() + b.offset(i), b.count(i));
      }
      break;
    case RawPattern::kOneCall:
      comm.AllreduceSum(b.in(), b.out(), b.span());
      break;
    case RawPattern::kChunked:
      RunChunked(comm, b, chunks.elems);
      break;
    case RawPattern::kChunkedCache:
      RunChunked(comm, b, chunks.cache_elems);
      break;
  }
}

}  // namespace hvdbench
