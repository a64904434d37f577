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
    case RawPattern::kOneCallInPlace:
      return "one call, in place";
    case RawPattern::kChunkedInPlace:
      return "chunked, in place";
    case RawPattern::kChunkedCacheInPlace:
      return "chunked, cache-sized, in place";
  }
  return "?";
}

bool InPlace(RawPattern p) {
  return p == RawPattern::kOneCallInPlace || p == RawPattern::kChunkedInPlace ||
         p == RawPattern::kChunkedCacheInPlace;
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
  if (b.has_output()) {  // with --in-place every pattern above is in place already
    const size_t out_of_place = out.size();
    for (size_t i = 0; i < out_of_place; ++i) {
      if (out[i] == RawPattern::kOneCall) out.push_back(RawPattern::kOneCallInPlace);
      if (out[i] == RawPattern::kChunked) out.push_back(RawPattern::kChunkedInPlace);
      if (out[i] == RawPattern::kChunkedCache) out.push_back(RawPattern::kChunkedCacheInPlace);
    }
  }
  return out;
}

namespace {

void RunChunked(RawComm& comm, const float* in, float* out, int64_t span, int64_t chunk_elems) {
  for (int64_t off = 0; off < span; off += chunk_elems) {
    comm.AllreduceSum(in + off, out + off, std::min(chunk_elems, span - off));
  }
}

}  // namespace

void RunPattern(RawComm& comm, RawPattern p, Buffers& b, const Chunks& chunks) {
  const float* in = InPlace(p) ? b.out() : b.in();  // in place: the output starts as the input
  switch (p) {
    case RawPattern::kPerTensor:
      for (size_t i = 0; i < b.tensors(); ++i) {
        comm.AllreduceSum(b.in() + b.offset(i), b.out() + b.offset(i), b.count(i));
      }
      break;
    case RawPattern::kOneCall:
    case RawPattern::kOneCallInPlace:
      comm.AllreduceSum(in, b.out(), b.span());
      break;
    case RawPattern::kChunked:
    case RawPattern::kChunkedInPlace:
      RunChunked(comm, in, b.out(), b.span(), chunks.elems);
      break;
    case RawPattern::kChunkedCache:
    case RawPattern::kChunkedCacheInPlace:
      RunChunked(comm, in, b.out(), b.span(), chunks.cache_elems);
      break;
  }
}

}  // namespace hvdbench
