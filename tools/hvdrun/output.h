// Prefixes every line a rank writes with "[RANK]<stdout>:" or
// "[RANK]<stderr>:" and writes whole lines to hvdrun's own stdout/stderr,
// one write() per line so lines of different ranks never interleave.
#pragma once

#include <string>

namespace hvd {
namespace run {

class LinePrefixer {
 public:
  // dest_fd: where prefixed lines go (1 or 2).
  LinePrefixer(int rank, const char* stream_name, int dest_fd);
  ~LinePrefixer() { Flush(); }
  LinePrefixer(const LinePrefixer&) = delete;
  LinePrefixer& operator=(const LinePrefixer&) = delete;

  void Feed(const char* data, size_t size);
  // Writes a trailing partial line (with a newline added).
  void Flush();

 private:
  void Emit(const char* line, size_t size);
  std::string prefix_;
  int dest_fd_;
  std::string partial_;
};

}  // namespace run
}  // namespace hvd
