#include "core/observability/timeline_writer.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/common/logging.h"

namespace hvd {
namespace {

// How long an event may wait in memory before it reaches the file, and how
// many events wake the writer early. Short enough that a killed job loses
// little, long enough that a busy loop is written in a few big writes.
constexpr auto kFlushPeriod = std::chrono::milliseconds(100);
constexpr size_t kWakeAt = 4096;

}  // namespace

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
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "w"));
  if (!f) {
    return Status::Invalid("cannot open timeline file '" + path + "': " + std::strerror(errno));
  }
  // Unbuffered: each batch then reaches the file in one write(2), which keeps
  // the window in which a killed process leaves a torn batch as small as can be.
  std::setvbuf(f.get(), nullptr, _IONBF, 0);
  if (std::fputs("[]", f.get()) < 0 || std::fflush(f.get()) != 0) {
    return Status::Invalid("cannot write timeline file '" + path + "': " + std::strerror(errno));
  }
  file_ = std::move(f);
  path_ = path;
  close_pos_ = 1;
  empty_ = true;
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
  file_.reset();
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
  // ",\n{...},\n{...}\n]" replaces the old ']' in one write.
  std::string out;
  for (const auto& e : batch) {
    out += empty_ ? "\n" : ",\n";
    empty_ = false;
    out += FormatTraceEvent(e);
  }
  out += "\n]";
  std::FILE* f = file_.get();
  if (std::fseek(f, close_pos_, SEEK_SET) != 0 ||
      std::fwrite(out.data(), 1, out.size(), f) != out.size() || std::fflush(f) != 0) {
    failed_ = true;  // say it once, then drop events rather than spam the log
    HVD_LOG(kWarning) << "timeline: writing '" << path_ << "' failed (" << std::strerror(errno)
                      << "); no further events are recorded in it";
    return;
  }
  close_pos_ += static_cast<long>(out.size()) - 1;
}

}  // namespace hvd
