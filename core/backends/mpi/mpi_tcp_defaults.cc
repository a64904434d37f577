#include "core/backends/mpi/mpi_tcp_defaults.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/backends/mpi/mpi_cvar.h"

namespace hvd {
namespace {

constexpr const char* kUserChoices[] = {"btl_tcp_flags", "btl_tcp_links"};

std::vector<std::string> ParamFiles(const std::function<const char*(const char*)>& getenv) {
  std::vector<std::string> files;
  if (const char* list = getenv("OMPI_MCA_mca_param_files")) {
    std::stringstream in(list);
    for (std::string f; std::getline(in, f, ':');) {
      if (!f.empty()) files.push_back(f);
    }
    return files;
  }
  files.push_back("/etc/openmpi/openmpi-mca-params.conf");  // Debian's sysconfdir
  if (const char* home = getenv("HOME")) {
    files.push_back(std::string(home) + "/.openmpi/mca-params.conf");
  }
  return files;
}

// Whether a parameter file sets `name` ("name = value" lines, # comments).
bool FileSets(const std::string& text, const std::string& name) {
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq > line.find('#')) continue;  // no setting, or a comment
    std::string key = line.substr(0, eq);
    key.erase(0, key.find_first_not_of(" \t"));
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key == name) return true;
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

bool WantDuplexTcp(const std::function<const char*(const char*)>& getenv,
                   const std::function<std::string(const std::string&)>& read_file) {
  for (const char* name : kUserChoices) {
    if (getenv(("OMPI_MCA_" + std::string(name)).c_str())) return false;
  }
  for (const std::string& file : ParamFiles(getenv)) {
    const std::string text = read_file(file);
    for (const char* name : kUserChoices) {
      if (FileSets(text, name)) return false;
    }
  }
  return true;
}

int64_t RingPieceBytesFor(long long tcp_flags, long long eager_limit, int64_t preferred) {
  constexpr long long kPut = 0x2;
  if (tcp_flags < 0 || !(tcp_flags & kPut) || eager_limit <= 0) return preferred;
  // Room for Open MPI's match header; 61440 of 65536 measured eager.
  return std::min<int64_t>(preferred, eager_limit - eager_limit / 16);
}

int64_t RingPieceBytes(int64_t preferred) {
  return RingPieceBytesFor(ReadMpiCvar("btl_tcp_flags"), ReadMpiCvar("btl_tcp_eager_limit"),
                           preferred);
}

bool PreferDuplexTcp() {
#ifdef OPEN_MPI
  if (WantDuplexTcp([](const char* n) { return std::getenv(n); }, ReadFile)) {
    return setenv("OMPI_MCA_btl_tcp_flags", "send", 0) == 0;
  }
#endif
  return false;
}

}  // namespace hvd
