// Where a rank's output goes: LinePrefixer prefixes every line it writes
// with "[RANK]<stdout>:" or "[RANK]<stderr>:" and writes whole lines to
// hvdrun's own stdout/stderr, one write() per line so lines of different
// ranks never interleave; with --output-filename the output is also copied,
// as written, into per-rank files.
#pragma once

#include <string>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace run {

// Writes everything, retrying on EINTR; gives up silently when the
// destination is gone (a closed pipe, a full disk): output must never stop
// the job.
void WriteAll(int fd, const char* data, size_t size);

// Creates dir and its missing parents.
Status MakeDirectories(const std::string& dir);

// "rank.N", N zero-padded to the width of np - 1 so names sort in rank
// order (horovodrun's names).
std::string RankOutputName(int rank, int np);

// Creates dir/name/ and opens dir/name/stdout and dir/name/stderr for
// writing (truncated).
Status OpenOutputCopies(const std::string& dir, const std::string& name, rendezvous::UniqueFd* out,
                        rendezvous::UniqueFd* err);

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
