#include "tools/hvdrun/output.h"

#include <unistd.h>

#include <cerrno>

namespace hvd {
namespace run {

namespace {

// A line longer than this is cut into several prefixed lines rather than
// buffered without bound.
constexpr size_t kMaxLine = 1 << 20;

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own output is gone (closed pipe): drop it
    off += static_cast<size_t>(n);
  }
}

}  // namespace

LinePrefixer::LinePrefixer(int rank, const char* stream_name, int dest_fd)
    : prefix_("[" + std::to_string(rank) + "]<" + stream_name + ">:"), dest_fd_(dest_fd) {}

void LinePrefixer::Feed(const char* data, size_t size) {
  size_t start = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\n') continue;
    if (partial_.empty()) {
      Emit(data + start, i - start);
    } else {
      partial_.append(data + start, i - start);
      Emit(partial_.data(), partial_.size());
      partial_.clear();
    }
    start = i + 1;
  }
  partial_.append(data + start, size - start);
  while (partial_.size() >= kMaxLine) {
    Emit(partial_.data(), kMaxLine);
    partial_.erase(0, kMaxLine);
  }
}

void LinePrefixer::Flush() {
  if (partial_.empty()) return;
  Emit(partial_.data(), partial_.size());
  partial_.clear();
}

void LinePrefixer::Emit(const char* line, size_t size) {
  std::string out;
  out.reserve(prefix_.size() + size + 1);
  out += prefix_;
  out.append(line, size);
  out += '\n';
  WriteAll(dest_fd_, out);
}

}  // namespace run
}  // namespace hvd
