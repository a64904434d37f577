// Initialisation, shutdown, topology and what the build and the job use.
#include <cstring>

#include "core/api/api.h"
#include "core/runtime/build_info.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {
namespace {

BackendChoice ToChoice(Backend b) {
  switch (b) {
    case Backend::kMpi:
      return BackendChoice::kMpi;
    case Backend::kGloo:
      return BackendChoice::kGloo;
    default:
      return BackendChoice::kAuto;
  }
}

// Whether the controller or the CPU-operations backend is `name`.
bool Uses(const char* name) {
  Runtime& rt = Runtime::Get();
  return rt.initialized() &&
         (std::strcmp(rt.controller_name(), name) == 0 || std::strcmp(rt.data_name(), name) == 0);
}

}  // namespace

Status Init(const InitOptions& options) {
  InitArgs args;
  args.controller = ToChoice(options.controller);
  args.cpu_operations = ToChoice(options.cpu_operations);
  args.use_mpi_comm = options.use_mpi_comm;
  args.mpi_comm = options.mpi_comm;
  return Runtime::Get().Init(args);
}

Status Shutdown() {
  return Runtime::Get().Shutdown();
}

bool Initialized() {
  return Runtime::Get().initialized();
}

Status CheckInitialized() {
  if (Initialized()) return Status::OK();
  return Status(Code::kNotInitialized, "hvd is not initialized (call hvd_init first)");
}

Status GetTopology(Topology* out) {
  Runtime& rt = Runtime::Get();
  if (!rt.initialized()) return Status::NotInitialized();
  const hvd::Topology& t = rt.topology();
  out->rank = t.rank;
  out->size = t.size;
  out->local_rank = t.local_rank;
  out->local_size = t.local_size;
  out->cross_rank = t.cross_rank;
  out->cross_size = t.cross_size;
  out->homogeneous = t.homogeneous;
  return Status::OK();
}

bool MpiEnabled() {
  return Uses("mpi");
}

bool GlooEnabled() {
  return Uses("gloo");
}

bool MpiThreadsSupported() {
  Runtime& rt = Runtime::Get();
  return rt.initialized() && std::strcmp(rt.controller_name(), "mpi") == 0 && MpiThreadMultiple();
}

bool BackendBuilt(Backend backend) {
  return hvd::BackendBuilt(ToChoice(backend));
}

bool CudaBuilt() {
  return hvd::CudaBuilt();
}

int NcclVersionCode() {
  return hvd::NcclVersionCode();
}

}  // namespace api
}  // namespace hvd
