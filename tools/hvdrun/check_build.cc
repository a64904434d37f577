#include "tools/hvdrun/check_build.h"

namespace hvd {
namespace run {

namespace {

// The HVD_HAVE_* macros come from tools/hvdrun/CMakeLists.txt, which derives
// them from the same HVD_WITH_* switches that core/CMakeLists.txt uses for
// libhvd, so the report describes the library built beside this hvdrun.
#ifdef HVD_HAVE_MPI
constexpr bool kMpi = true;
#else
constexpr bool kMpi = false;
#endif
#ifdef HVD_HAVE_GLOO
constexpr bool kGloo = true;
#else
constexpr bool kGloo = false;
#endif
#ifdef HVD_HAVE_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif
#ifdef HVD_HAVE_NCCL
constexpr bool kNccl = true;
#else
constexpr bool kNccl = false;
#endif

std::string Line(bool on, const char* name) {
  return std::string("    [") + (on ? "X" : " ") + "] " + name + "\n";
}

}  // namespace

std::string CheckBuildReport() {
  std::string r = "hvd v" HVD_VERSION_STRING ":\n\n";
  r += "Available Controllers:\n";
  r += Line(kMpi, "MPI");
  r += Line(kGloo, "Gloo");
  r += "\nAvailable Tensor Operations:\n";
  r += Line(kNccl, "NCCL");
  r += Line(kMpi, "MPI");
  r += Line(kGloo, "Gloo");
  r += "\nAvailable Devices:\n";
  r += Line(true, "CPU");
  r += Line(kCuda, "CUDA");
  return r;
}

}  // namespace run
}  // namespace hvd
