#include "core/observability/flight_recorder.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hvd {
namespace {

int64_t Ns(FlightRecorder::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::string JsonString(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char* StateName(const int64_t* at) {
  if (at[FlightRecorder::kDone]) return "done";
  if (at[FlightRecorder::kExecuting]) return "executing";
  if (at[FlightRecorder::kNegotiated]) return "negotiated";
  return "submitted";
}

}  // namespace

FlightRecorder::Clock::time_point FlightRecorder::Now() {
#ifdef CLOCK_MONOTONIC_COARSE
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) {
    return Clock::time_point(std::chrono::seconds(ts.tv_sec) +
                             std::chrono::nanoseconds(ts.tv_nsec));
  }
#endif
  return Clock::now();
}

void FlightRecorder::Reset(size_t capacity) {
  // A power of two: a slot's index is a mask, not a division (per stage).
  size_t pow2 = capacity ? 1 : 0;
  while (pow2 && pow2 < capacity) pow2 <<= 1;
  capacity = pow2;
  if (capacity != capacity_) {
    ring_ = capacity ? std::make_unique<Slot[]>(capacity) : nullptr;
    capacity_ = capacity;
  }
  for (size_t i = 0; i < capacity_; ++i) ring_[i].token.store(0, std::memory_order_relaxed);
  next_.store(0);
}

uint64_t FlightRecorder::Submit(const std::string& name, OpType type, int32_t set, int64_t set_seq,
                                DataType dt, const std::vector<int64_t>& shape, int64_t bytes,
                                Clock::time_point at) {
  if (!capacity_) return 0;
  // One writer at a time (the caller's lock): no atomic read-modify-write.
  const uint64_t token = next_.load(std::memory_order_relaxed) + 1;
  next_.store(token, std::memory_order_relaxed);
  Slot& s = ring_[(token - 1) & (capacity_ - 1)];
  // Invalidated before the fields change: the acquire half keeps the
  // field writes below after it (an RMW, not a fence: TSan has no fences).
  s.token.exchange(0, std::memory_order_acq_rel);
  s.set = set;
  s.set_seq = set_seq;
  s.type = type;
  s.dtype = dt;
  s.ndim = static_cast<int32_t>(shape.size());
  const size_t dims = std::min<size_t>(shape.size(), kMaxDims);
  for (size_t d = 0; d < dims; ++d) s.shape[d] = shape[d];  // no memmove call for a few dims
  s.bytes = bytes;
  // Eight bytes at a time: an inlined memcpy of a variable length becomes
  // `rep movs`, whose start-up dominated the cost of a submission.
  const size_t n = std::min(name.size(), kNameBytes - 1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(s.name + i, name.data() + i, 8);
  for (; i < n; ++i) s.name[i] = name[i];
  s.name[n] = '\0';
  s.at[kSubmitted].store(Ns(at), std::memory_order_relaxed);
  for (int i = kNegotiated; i < kStages; ++i) s.at[i].store(0, std::memory_order_relaxed);
  s.code.store(static_cast<int32_t>(Code::kInProgress), std::memory_order_relaxed);
  s.token.store(token, std::memory_order_release);
  return token;
}

void FlightRecorder::Mark(uint64_t token, Stage stage, Clock::time_point at) {
  if (!token || !capacity_) return;
  Slot& s = ring_[(token - 1) & (capacity_ - 1)];
  if (s.token.load(std::memory_order_acquire) != token) return;
  s.at[stage].store(Ns(at), std::memory_order_relaxed);
}

void FlightRecorder::Done(uint64_t token, Code code, Clock::time_point at) {
  if (!token || !capacity_) return;
  Slot& s = ring_[(token - 1) & (capacity_ - 1)];
  if (s.token.load(std::memory_order_acquire) != token) return;
  s.code.store(static_cast<int32_t>(code), std::memory_order_relaxed);
  s.at[kDone].store(Ns(at), std::memory_order_relaxed);
}

Status FlightRecorder::Dump(const std::string& path, const Header& header) const {
  std::lock_guard<std::mutex> lock(dump_mu_);
  // Stage times go out as wall-clock milliseconds, comparable across ranks
  // whose hosts' clocks agree.
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  const double wall_ms = static_cast<double>(wall.tv_sec) * 1e3 + wall.tv_nsec / 1e6;
  const int64_t now_ns = Ns(Clock::now());
  const auto to_wall = [&](int64_t ns) { return wall_ms - static_cast<double>(now_ns - ns) / 1e6; };

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f)
    return Status::Invalid("flight recorder: cannot write " + tmp + ": " + std::strerror(errno));
  const uint64_t last = next_.load();
  std::fprintf(f,
               "{\"format\": \"hvd-flight-1\", \"rank\": %d, \"size\": %d, \"host\": %s, "
               "\"pid\": %d, \"reason\": %s, \"dumped_at_ms\": %.3f, \"capacity\": %zu, "
               "\"submitted\": %llu,\n \"ops\": [",
               header.rank, header.size, JsonString(header.host.c_str()).c_str(),
               static_cast<int>(getpid()), JsonString(header.reason.c_str()).c_str(), wall_ms,
               capacity_, static_cast<unsigned long long>(last));
  bool first = true;
  const uint64_t begin = last > capacity_ ? last - capacity_ + 1 : 1;
  for (uint64_t token = begin; token <= last && capacity_; ++token) {
    const Slot& s = ring_[(token - 1) & (capacity_ - 1)];
    if (s.token.load(std::memory_order_acquire) != token) continue;
    Slot copy_fields;  // a consistent copy, or skip the slot
    int64_t at[kStages];
    for (int i = 0; i < kStages; ++i) at[i] = s.at[i].load(std::memory_order_relaxed);
    const int32_t code = s.code.load(std::memory_order_relaxed);
    copy_fields.set = s.set;
    copy_fields.set_seq = s.set_seq;
    copy_fields.type = s.type;
    copy_fields.dtype = s.dtype;
    copy_fields.ndim = s.ndim;
    std::copy(s.shape, s.shape + kMaxDims, copy_fields.shape);
    copy_fields.bytes = s.bytes;
    std::memcpy(copy_fields.name, s.name, kNameBytes);
    copy_fields.name[kNameBytes - 1] = '\0';
    // The release half keeps the field reads above before the check.
    if (s.token.fetch_add(0, std::memory_order_acq_rel) != token) continue;
    std::string shape = "[";
    for (int d = 0; d < std::min(copy_fields.ndim, kMaxDims); ++d) {
      shape += (d ? ", " : "") + std::to_string(copy_fields.shape[d]);
    }
    shape += "]";
    std::fprintf(f,
                 "%s\n  {\"seq\": %llu, \"set\": %d, \"set_seq\": %lld, \"name\": %s, \"kind\": "
                 "\"%s\", \"dtype\": \"%s\", \"ndim\": %d, \"shape\": %s, \"bytes\": %lld, "
                 "\"state\": \"%s\", \"status\": %d",
                 first ? "" : ",", static_cast<unsigned long long>(token), copy_fields.set,
                 static_cast<long long>(copy_fields.set_seq), JsonString(copy_fields.name).c_str(),
                 OpTypeName(copy_fields.type), DataTypeName(copy_fields.dtype), copy_fields.ndim,
                 shape.c_str(), static_cast<long long>(copy_fields.bytes), StateName(at), code);
    static const char* const kStageNames[kStages] = {"submitted_ms", "negotiated_ms",
                                                     "executing_ms", "done_ms"};
    for (int i = 0; i < kStages; ++i) {
      if (at[i]) std::fprintf(f, ", \"%s\": %.3f", kStageNames[i], to_wall(at[i]));
    }
    std::fprintf(f, "}");
    first = false;
  }
  std::fprintf(f, "\n]}\n");
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Invalid("flight recorder: cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace hvd
