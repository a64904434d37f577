#include "core/observability/trace_layout.h"

#include <algorithm>

namespace hvd {
namespace {

// Spaces in pieces, so that a 64 MiB reserve needs no 64 MiB string.
bool FillSpaces(int64_t from, int64_t to, TraceFile* file) {
  constexpr int64_t kPiece = 1 << 20;
  const std::string spaces(static_cast<size_t>(std::min(kPiece, std::max<int64_t>(to - from, 0))),
                           ' ');
  for (int64_t at = from; at < to; at += kPiece) {
    if (!file->WriteAt(at, spaces.substr(0, static_cast<size_t>(std::min(kPiece, to - at)))))
      return false;
  }
  return true;
}

}  // namespace

bool TraceLayout::Start(TraceFile* file) {
  data_end_ = 1;
  close_pos_ = 2;
  return file->WriteAt(0, "[\n]");
}

bool TraceLayout::SamePage(int64_t begin, int64_t end) const {
  return begin / opt_.page == (end - 1) / opt_.page;
}

bool TraceLayout::Reserve(int64_t end, TraceFile* file) {
  if (end <= close_pos_ - 1) return true;
  // Doubling keeps the growths (and their windows) few; the cap keeps a
  // killed job's file from holding more than 64 MiB of spaces.
  const int64_t grow = std::min(std::max(end, opt_.min_reserve), opt_.max_reserve);
  const int64_t new_close = end + grow + 1;
  // Spaces after the bracket keep the file valid however much of them lands.
  if (!FillSpaces(close_pos_ + 1, new_close - 1, file)) return false;
  // From here until the old ']' is a space, the file has two brackets. Its
  // '\n' goes after, in a write of its own: the two may lie on two pages.
  if (!file->WriteAt(new_close - 1, "\n]") || !file->WriteAt(close_pos_, " ") ||
      !file->WriteAt(close_pos_ - 1, " "))
    return false;
  close_pos_ = new_close;
  return true;
}

bool TraceLayout::Flush(int64_t at, std::string* chunk, TraceFile* file) {
  if (!file->WriteAt(at, *chunk)) return false;
  data_end_ = at + static_cast<int64_t>(chunk->size());
  chunk->clear();
  return true;
}

bool TraceLayout::Append(const std::vector<std::string>& events, TraceFile* file) {
  std::string chunk;
  int64_t at = data_end_;
  for (const auto& event : events) {
    const char* sep = data_end_ == 1 && chunk.empty() ? "\n" : ",\n";  // no comma before the first
    const int64_t n = static_cast<int64_t>(std::char_traits<char>::length(sep) + event.size());
    const int64_t pending = static_cast<int64_t>(chunk.size());
    if (pending > 0 && !SamePage(at, at + pending + n)) {
      if (!Flush(at, &chunk, file)) return false;
    }
    if (chunk.empty()) {
      at = data_end_;
      const int64_t room = opt_.page - at % opt_.page;
      if (n > room && n <= opt_.page) at += room;  // the rest of this page stays spaces
    }
    if (!Reserve(at + static_cast<int64_t>(chunk.size()) + n, file)) return false;
    chunk += sep;
    chunk += event;
  }
  return chunk.empty() || Flush(at, &chunk, file);
}

bool TraceLayout::Finish(TraceFile* file) {
  if (data_end_ == close_pos_ - 1) return true;  // "\n]" already follows the data
  bool ok;
  if (SamePage(data_end_, close_pos_ + 1)) {
    // One write within a page: the new bracket and the old one's removal land together.
    ok = file->WriteAt(data_end_,
                       "\n]" + std::string(static_cast<size_t>(close_pos_ - data_end_ - 1), ' '));
  } else {
    // Only the old ']': its '\n' may be the new bracket (data ending 2 before it).
    ok = file->WriteAt(data_end_, "\n]") && file->WriteAt(close_pos_, " ");
  }
  if (!ok || !file->Truncate(data_end_ + 2)) return false;
  close_pos_ = data_end_ + 1;
  return true;
}

}  // namespace hvd
