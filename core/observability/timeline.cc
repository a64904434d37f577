#include "core/observability/timeline.h"

#include <algorithm>

#include "core/observability/timeline_writer.h"

namespace hvd {
namespace {

bool IsNegotiation(const std::string& name) {
  return name.rfind("NEGOTIATE_", 0) == 0;
}

std::string OpEndArgs(DataType dtype, const std::vector<int64_t>& shape) {
  std::string a = "{\"dtype\":\"" + std::string(DataTypeName(dtype)) + "\",\"shape\":[";
  for (size_t i = 0; i < shape.size(); ++i) a += (i ? "," : "") + std::to_string(shape[i]);
  return a + "]}";
}

}  // namespace

Timeline::Timeline() = default;
Timeline::~Timeline() {
  Stop();
}

Status Timeline::Start(const std::string& path, bool mark_cycles, int rank) {
  std::lock_guard<std::mutex> control(control_mu_);
  if (rank != 0) return Status::OK();  // one file per job: the coordinator's view
  StopLocked();
  auto writer = std::make_unique<TimelineWriter>();
  HVD_RETURN_IF_ERROR(writer->Open(path));
  std::lock_guard<std::mutex> l(mu_);
  writer_ = std::move(writer);
  start_ = std::chrono::steady_clock::now();
  mark_cycles_ = mark_cycles;
  next_pid_ = 1;
  tracks_.clear();  // pids and metadata are per file
  active_ = true;
  return Status::OK();
}

void Timeline::Stop() {
  std::lock_guard<std::mutex> control(control_mu_);
  StopLocked();
}

void Timeline::StopLocked() {
  std::unique_ptr<TimelineWriter> writer;
  {
    std::lock_guard<std::mutex> l(mu_);
    active_ = false;
    writer = std::move(writer_);
    tracks_.clear();
  }
  // Outside mu_: the final flush and join must not block the hooks, which
  // now see no writer and return.
  if (writer) writer->Close();
}

int64_t Timeline::Micros(TimePoint t) const {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t - start_).count();
  return us < 0 ? 0 : static_cast<int64_t>(us);
}

Timeline::Track& Timeline::TrackOf(const std::string& tensor) {
  auto it = tracks_.find(tensor);
  if (it != tracks_.end()) return it->second;
  Track& t = tracks_[tensor];
  t.pid = next_pid_++;
  std::string name_args = "{\"name\":";
  AppendJsonString(tensor, &name_args);
  name_args += "}";
  writer_->Push(TraceEvent{'M', 't', t.pid, 0, "process_name", std::move(name_args)});
  // Keeps Perfetto's track order the order tensors first appeared.
  writer_->Push(TraceEvent{'M', 't', t.pid, 0, "process_sort_index",
                           "{\"sort_index\":" + std::to_string(t.pid) + "}"});
  return t;
}

void Timeline::Emit(Track& t, char phase, const std::string& name, int64_t ts, std::string args) {
  // Clamped so that B/E pairs on a track nest in file order and in time order
  // alike (QUEUE may claim to start before the negotiation that preceded it).
  if (ts < t.last_ts) ts = t.last_ts;
  t.last_ts = ts;
  writer_->Push(TraceEvent{phase, 't', t.pid, ts, name, std::move(args)});
}

// The operation's B waits for its first activity, so that an activity dated
// in the past (QUEUE, from submission) still nests inside the operation.
void Timeline::BeginPendingOp(Track& t, int64_t ts) {
  if (!t.op_pending) return;
  t.op_pending = false;
  Emit(t, 'B', t.op_name, std::min(t.op_ts, ts));
  t.op_depth = t.stack.size();
  t.stack.push_back(t.op_name);
}

void Timeline::NegotiateStart(const std::string& tensor, OpType type) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  const std::string name = std::string("NEGOTIATE_") + OpTypeUpperName(type);
  Emit(t, 'B', name, Micros(std::chrono::steady_clock::now()));
  t.stack.push_back(name);
}

void Timeline::NegotiateRankReady(const std::string& tensor, int rank) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  Emit(t, 'i', std::to_string(rank), Micros(std::chrono::steady_clock::now()),
       "{\"rank\":" + std::to_string(rank) + "}");
}

void Timeline::NegotiateEnd(const std::string& tensor) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  size_t at = t.stack.size();
  while (at > 0 && !IsNegotiation(t.stack[at - 1])) --at;
  if (at == 0) return;  // began before this file: nothing to close
  const int64_t now = Micros(std::chrono::steady_clock::now());
  while (t.stack.size() >= at) {
    Emit(t, 'E', t.stack.back(), now);
    t.stack.pop_back();
  }
}

void Timeline::OpStart(const std::string& tensor, OpType type) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  t.op_pending = true;
  t.op_name = OpTypeUpperName(type);
  t.op_ts = Micros(std::chrono::steady_clock::now());
}

void Timeline::ActivityStart(const std::string& tensor, const std::string& activity,
                             std::chrono::steady_clock::time_point at) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  const int64_t ts = Micros(at);
  BeginPendingOp(t, ts);
  Emit(t, 'B', activity, ts);
  t.stack.push_back(activity);
}

void Timeline::ActivityEnd(const std::string& tensor) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  // Only activities close here: never the operation or a negotiation, and
  // nothing that began before this file was started.
  if (t.stack.empty() || IsNegotiation(t.stack.back())) return;
  if (t.op_depth != kNoOp && t.stack.size() == t.op_depth + 1) return;
  Emit(t, 'E', t.stack.back(), Micros(std::chrono::steady_clock::now()));
  t.stack.pop_back();
}

void Timeline::OpEnd(const std::string& tensor, DataType dtype, const std::vector<int64_t>& shape) {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_) return;
  Track& t = TrackOf(tensor);
  const int64_t now = Micros(std::chrono::steady_clock::now());
  BeginPendingOp(t, now);
  if (t.op_depth == kNoOp) return;           // the operation began before this file
  while (t.stack.size() > t.op_depth + 1) {  // activities an executor left open
    Emit(t, 'E', t.stack.back(), now);
    t.stack.pop_back();
  }
  Emit(t, 'E', t.op_name, now, OpEndArgs(dtype, shape));
  t.stack.pop_back();
  t.op_depth = kNoOp;
}

void Timeline::MarkCycleStart() {
  std::lock_guard<std::mutex> l(mu_);
  if (!writer_ || !mark_cycles_) return;
  writer_->Push(
      TraceEvent{'i', 'g', 0, Micros(std::chrono::steady_clock::now()), "CYCLE_START", ""});
}

}  // namespace hvd
