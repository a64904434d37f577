// The timeline's file side: a queue of trace events and a writer thread that
// formats and appends them in batches, so the background loop never waits
// on disk. The file is a JSON array that stays closed while it grows: see
// trace_layout.h for how a process killed mid-write leaves a parseable file.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/common/status.h"
#include "core/observability/trace_layout.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

// One Chrome trace event. Formatting happens on the writer thread; `args` is
// an already-serialised JSON object ("" for none).
struct TraceEvent {
  char phase = 'i';  // B, E, i, M
  char scope = 't';  // instants: 't' one track, 'g' a line across all
  int pid = 0;
  int64_t ts_us = 0;
  std::string name;
  std::string args;
};

// Appends `s` to `out` as a JSON string literal (quotes included).
void AppendJsonString(const std::string& s, std::string* out);
// One event as a JSON object, no trailing separator.
std::string FormatTraceEvent(const TraceEvent& e);

class TimelineWriter {
 public:
  TimelineWriter() = default;
  ~TimelineWriter();  // Close()
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // Creates (truncates) the file, writes "[\n]" and starts the writer thread.
  Status Open(const std::string& path);
  // Thread-safe; the event is written within one flush period.
  void Push(TraceEvent e);
  // Writes what is queued, joins the thread, closes the file. Idempotent.
  void Close();

 private:
  struct PosixFile : TraceFile {
    bool WriteAt(int64_t offset, const std::string& bytes) override;
    bool Truncate(int64_t size) override;
    rendezvous::UniqueFd fd;
  };
  void Run();
  void WriteBatch(const std::vector<TraceEvent>& batch);
  void Fail();

  PosixFile file_;
  TraceLayout layout_{TraceLayout::Options()};
  std::string path_;
  bool failed_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TraceEvent> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hvd
