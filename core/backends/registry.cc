#include "core/backends/registry.h"

namespace hvd {

const std::vector<BackendEntry>& Backends() {
  static const std::vector<BackendEntry> entries = [] {
    std::vector<BackendEntry> v;
#ifdef HVD_HAVE_MPI
    v.push_back(MpiBackendEntry());
#endif
#ifdef HVD_HAVE_GLOO
    v.push_back(GlooBackendEntry());
#endif
    return v;
  }();
  return entries;
}

const BackendEntry* FindBackend(BackendChoice choice) {
  for (const auto& e : Backends()) {
    if (e.choice == choice) return &e;
  }
  return nullptr;
}

}  // namespace hvd
