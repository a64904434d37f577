#include "core/observability/timeline_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/common/logging.h"

namespace hvd {
namespace {

// How long an event may wait in memory before it reaches the file, and how
// many events wake the writer early. Short enough that a killed job loses
// little, long enough that a busy loop is written in a few big writes.
constexpr auto kFlushPeriod = std::chrono::milliseconds(100);
constexpr size_t kWakeAt = 4096;

TraceLayout::Options LayoutOptions() {
  TraceLayout::Options o;
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) o.page = page;
  return o;
}

}  // namespace

bool TimelineWriter::PosixFile::WriteAt(int64_t offset, const std::string& bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::pwrite(fd.get(), p, left, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

bool TimelineWriter::PosixFile::Truncate(int64_t size) {
  return ::ftruncate(fd.get(), size) == 0;
}

void AppendJsonString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string FormatTraceEvent(const TraceEvent& e) {
  std::string s = "{\"name\":";
  AppendJsonString(e.name, &s);
  s += ",\"ph\":\"";
  s.push_back(e.phase);
  s += "\",\"pid\":" + std::to_string(e.pid) + ",\"tid\":0";
  // Metadata events carry no time.
  if (e.phase != 'M') s += ",\"ts\":" + std::to_string(e.ts_us);
  if (e.phase == 'i') {
    s += ",\"s\":\"";
    s.push_back(e.scope);
    s += "\"";
  }
  if (!e.args.empty()) s += ",\"args\":" + e.args;
  s += "}";
  return s;
}

TimelineWriter::~TimelineWriter() {
  Close();
}

Status TimelineWriter::Open(const std::string& path) {
  file_.fd.Reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!file_.fd.valid()) {
    return Status::Invalid("cannot open timeline file '" + path + "': " + std::strerror(errno));
  }
  layout_ = TraceLayout(LayoutOptions());
  if (!layout_.Start(&file_)) {
    const int err = errno;
    file_.fd.Reset();
    return Status::Invalid("cannot write timeline file '" + path + "': " + std::strerror(err));
  }
  path_ = path;
  failed_ = false;
  stop_ = false;
  thread_ = std::thread(&TimelineWriter::Run, this);
  return Status::OK();
}

void TimelineWriter::Push(TraceEvent e) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(e));
    wake = queue_.size() == kWakeAt;
  }
  if (wake) cv_.notify_one();
}

void TimelineWriter::Close() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  // A clean end drops the reserve of spaces after the last event.
  if (!failed_ && !layout_.Finish(&file_)) Fail();
  file_.fd.Reset();
}

void TimelineWriter::Run() {
  std::vector<TraceEvent> batch;
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait_for(l, kFlushPeriod, [this] { return stop_ || queue_.size() >= kWakeAt; });
    batch.swap(queue_);  // the hot path only ever waits for this swap
    const bool stopping = stop_;
    l.unlock();
    WriteBatch(batch);
    batch.clear();
    l.lock();
    if (stopping && queue_.empty()) return;
  }
}

void TimelineWriter::WriteBatch(const std::vector<TraceEvent>& batch) {
  if (batch.empty() || failed_) return;
  std::vector<std::string> events;
  events.reserve(batch.size());
  for (const auto& e : batch) events.push_back(FormatTraceEvent(e));
  if (!layout_.Append(events, &file_)) Fail();
}

void TimelineWriter::Fail() {
  failed_ = true;  // say it once, then drop events rather than spam the log
  HVD_LOG(kWarning) << "timeline: writing '" << path_ << "' failed (" << std::strerror(errno)
                    << "); no further events are recorded in it";
}

}  // namespace hvd
