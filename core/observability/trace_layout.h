// Where the timeline's bytes go in its file, so that the file is a valid JSON
// array after every write the kernel can leave half done.
//
// A process killed by SIGKILL in the middle of a write(2) to a regular file
// leaves a prefix of it: Linux copies a write page by page and checks for a
// fatal signal before each page, so a write within one page lands whole and
// a longer one can stop at any page boundary. Hence:
//   - the closing "\n]" sits at the end of a reserve of spaces (JSON
//     whitespace) that events are written into, so appending never touches it;
//   - events are written in chunks that each lie within one page and hold
//     whole events; an event that would cross a page starts the next page,
//     the rest of this one staying spaces;
//   - when the reserve runs out, new spaces and a new "\n]" are appended
//     after the old bracket, which then becomes a space. Between those two
//     writes (microseconds; at the first event, then at each doubling of
//     the file, every 64 MiB beyond 64 MiB) the file has two brackets, and a
//     kill there leaves it invalid. Finish() moves the bracket back and
//     truncates the spaces, the same way.
// An event longer than a page is written in one write and can be torn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd {

// The file operations the layout needs; tests record them instead.
class TraceFile {
 public:
  virtual ~TraceFile() = default;
  virtual bool WriteAt(int64_t offset, const std::string& bytes) = 0;
  virtual bool Truncate(int64_t size) = 0;
};

class TraceLayout {
 public:
  struct Options {
    int64_t page = 4096;             // the unit a killed write is cut at
    int64_t min_reserve = 1 << 20;   // spaces added at the first growth
    int64_t max_reserve = 64 << 20;  // ... and at most at any later one
  };
  explicit TraceLayout(Options options) : opt_(options) {}

  // Writes "[\n]" at offset 0 of an empty file.
  bool Start(TraceFile* file);
  // Appends already formatted events (JSON objects, no separators).
  bool Append(const std::vector<std::string>& events, TraceFile* file);
  // Ends the array right after the last event and truncates the reserve.
  bool Finish(TraceFile* file);

 private:
  bool Reserve(int64_t end, TraceFile* file);
  bool SamePage(int64_t begin, int64_t end) const;
  bool Flush(int64_t at, std::string* chunk, TraceFile* file);

  Options opt_;
  int64_t data_end_ = 1;   // where the next event goes (after the last one; 1: none yet)
  int64_t close_pos_ = 2;  // offset of the closing ']' (a '\n' before it)
};

}  // namespace hvd
