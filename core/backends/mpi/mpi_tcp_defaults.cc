#include "core/backends/mpi/mpi_tcp_defaults.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

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

// Open MPI's control variable `name` as an integer, or -1 where it has none
// (another MPI, or the TCP transport not opened).
long long ReadCvar(const char* name) {
  int provided = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return -1;
  MPI_T_cvar_get_num(&count);
  long long value = -1;
  for (int i = 0; i < count && value < 0; ++i) {
    char n[256], desc[256];
    int nlen = sizeof n, dlen = sizeof desc, verbosity = 0, bind = 0, scope = 0, elements = 0;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(i, n, &nlen, &verbosity, &dt, &en, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        std::strcmp(n, name) != 0) {
      continue;
    }
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &elements) != MPI_SUCCESS) continue;
    if (elements == 1) {
      unsigned char buf[32] = {0};  // room for any integer type
      if (MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
        if (dt == MPI_UNSIGNED || dt == MPI_INT) {
          unsigned v = 0;
          std::memcpy(&v, buf, sizeof(v));
          value = v;
        } else if (dt == MPI_UNSIGNED_LONG || dt == MPI_LONG || dt == MPI_UNSIGNED_LONG_LONG ||
                   dt == MPI_LONG_LONG) {
          unsigned long long v = 0;
          std::memcpy(&v, buf, sizeof(v));
          value = static_cast<long long>(v);
        }
      }
    }
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return value;
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
  return RingPieceBytesFor(ReadCvar("btl_tcp_flags"), ReadCvar("btl_tcp_eager_limit"), preferred);
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
