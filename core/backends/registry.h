// How backends come into existence: each backend file provides one factory
// and registry.cc lists it. Adding a backend = one file + one line there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"

namespace hvd {

struct CommInitArgs {
  // The settings and the launcher's variables; null: read the environment
  // (tests that create a backend on its own).
  const Config* config = nullptr;
  bool use_mpi_comm = false;  // hvd_init_mpi_comm
  int mpi_comm = 0;           // Fortran handle
};

using CommFactory = Status (*)(const CommInitArgs& args, std::unique_ptr<Comm>* out);

struct BackendEntry {
  const char* name;  // "mpi", "gloo"
  BackendChoice choice;
  // True when the launcher's variables say this backend's launcher started
  // us (e.g. OMPI_COMM_WORLD_SIZE for MPI, HVD_RENDEZVOUS_ADDR for Gloo).
  bool (*launched_by_env)(const LaunchEnv& env);
  CommFactory create_world;
};

// Backends compiled into this build, in order of preference for AUTO.
const std::vector<BackendEntry>& Backends();
const BackendEntry* FindBackend(BackendChoice choice);

// Per-backend entries, defined in each backend's file.
#ifdef HVD_HAVE_MPI
BackendEntry MpiBackendEntry();
bool MpiThreadsSupported();
#endif
#ifdef HVD_HAVE_GLOO
BackendEntry GlooBackendEntry();
#endif

}  // namespace hvd
