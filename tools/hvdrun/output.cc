#include "tools/hvdrun/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hvd {
namespace run {

namespace {

// A line longer than this is cut into several prefixed lines rather than
// buffered without bound.
constexpr size_t kMaxLine = 1 << 20;

Status MakeDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::OK();
    return Status::Invalid("cannot create directory " + dir + ": a file of that name exists");
  }
  return Status::Invalid("cannot create directory " + dir + ": " + rendezvous::ErrnoString(errno));
}

Status OpenForWriting(const std::string& path, rendezvous::UniqueFd* fd) {
  fd->Reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (fd->valid()) return Status::OK();
  return Status::Invalid("cannot open " + path + ": " + rendezvous::ErrnoString(errno));
}

}  // namespace

void WriteAll(int fd, const char* data, size_t size) {
  size_t off = 0;
  while (off < size) {
    ssize_t n = ::write(fd, data + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

Status MakeDirectories(const std::string& dir) {
  for (size_t slash = dir.find('/', 1); slash != std::string::npos;
       slash = dir.find('/', slash + 1)) {
    HVD_RETURN_IF_ERROR(MakeDirectory(dir.substr(0, slash)));
  }
  return MakeDirectory(dir);
}

std::string RankOutputName(int rank, int np) {
  const size_t width = std::to_string(np > 1 ? np - 1 : 0).size();
  std::string n = std::to_string(rank);
  return "rank." + std::string(n.size() < width ? width - n.size() : 0, '0') + n;
}

Status OpenOutputCopies(const std::string& dir, const std::string& name, rendezvous::UniqueFd* out,
                        rendezvous::UniqueFd* err) {
  const std::string sub = dir + "/" + name;
  HVD_RETURN_IF_ERROR(MakeDirectory(sub));
  HVD_RETURN_IF_ERROR(OpenForWriting(sub + "/stdout", out));
  return OpenForWriting(sub + "/stderr", err);
}

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
  WriteAll(dest_fd_, out.data(), out.size());
}

}  // namespace run
}  // namespace hvd
