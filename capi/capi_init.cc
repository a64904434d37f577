// Initialisation, shutdown, topology and what the build and the job use.
#include <string>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

api::Backend ToBackend(hvd_backend b) {
  switch (b) {
    case HVD_BACKEND_MPI:
      return api::Backend::kMpi;
    case HVD_BACKEND_GLOO:
      return api::Backend::kGloo;
    default:
      return api::Backend::kAuto;
  }
}

hvd_status Init(const char* fn, const hvd_init_options* opts) {
  hvd_init_options o = HVD_INIT_OPTIONS_INIT;
  Status s = ReadOptions(opts, &o, "hvd_init_with");
  if (!s.ok()) return Report(s);
  api::InitOptions args;
  args.controller = ToBackend(o.controller);
  args.cpu_operations = ToBackend(o.cpu_operations);
  args.use_mpi_comm = o.use_mpi_comm != 0;
  args.mpi_comm = o.mpi_comm;
  s = api::Init(args);
  if (s.code() == Code::kAlreadyInitialized) {
    s = Status(s.code(), s.message() + "; call hvd_shutdown before initializing again");
  }
  return ReportFrom(fn, s);
}

// A topology query: -1 and a last error when not initialised.
int Query(const char* fn, int (*get)(const api::Topology&)) {
  return Guarded(fn, -1, [fn, get] {
    api::Topology t;
    Status s = api::GetTopology(&t);
    if (!s.ok()) {
      ReportFrom(fn, s);
      return -1;
    }
    return get(t);
  });
}

// A yes/no question about the build or the job: 0 if it throws.
int Ask(const char* fn, bool (*question)()) {
  return Guarded(fn, 0, [question] { return question() ? 1 : 0; });
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

void hvd_init_options_init(hvd_init_options* opts) {
  if (opts) *opts = HVD_INIT_OPTIONS_INIT;  // a struct copy: cannot throw
}

void hvd_op_options_init(hvd_op_options* opts) {
  if (opts) *opts = HVD_OP_OPTIONS_INIT;  // a struct copy: cannot throw
}

hvd_status hvd_init_with(const hvd_init_options* opts) {
  return hvd::capi::Guard("hvd_init_with", [opts] { return hvd::capi::Init("hvd_init", opts); });
}

hvd_status hvd_init(void) {
  return hvd::capi::Guard("hvd_init", [] { return hvd::capi::Init("hvd_init", nullptr); });
}

hvd_status hvd_init_mpi_comm(int fortran_comm) {
  return hvd::capi::Guard("hvd_init_mpi_comm", [fortran_comm] {
    if (!hvd::api::BackendBuilt(hvd::api::Backend::kMpi)) {
      return hvd::capi::Fail(hvd::Code::kUnsupported,
                             "hvd_init_mpi_comm: this libhvd was built without MPI");
    }
    hvd_init_options o = HVD_INIT_OPTIONS_INIT;
    o.use_mpi_comm = 1;
    o.mpi_comm = fortran_comm;
    return hvd::capi::Init("hvd_init_mpi_comm", &o);
  });
}

hvd_status hvd_shutdown(void) {
  return hvd::capi::Guard("hvd_shutdown", [] { return hvd::capi::Report(hvd::api::Shutdown()); });
}

int hvd_is_initialized(void) {
  return hvd::capi::Guarded("hvd_is_initialized", 0,
                            [] { return hvd::api::Initialized() ? 1 : 0; });
}

int hvd_rank(void) {
  return hvd::capi::Query("hvd_rank", [](const hvd::api::Topology& t) { return t.rank; });
}
int hvd_size(void) {
  return hvd::capi::Query("hvd_size", [](const hvd::api::Topology& t) { return t.size; });
}
int hvd_local_rank(void) {
  return hvd::capi::Query("hvd_local_rank",
                          [](const hvd::api::Topology& t) { return t.local_rank; });
}
int hvd_local_size(void) {
  return hvd::capi::Query("hvd_local_size",
                          [](const hvd::api::Topology& t) { return t.local_size; });
}
int hvd_cross_rank(void) {
  return hvd::capi::Query("hvd_cross_rank",
                          [](const hvd::api::Topology& t) { return t.cross_rank; });
}
int hvd_cross_size(void) {
  return hvd::capi::Query("hvd_cross_size",
                          [](const hvd::api::Topology& t) { return t.cross_size; });
}
int hvd_is_homogeneous(void) {
  return hvd::capi::Query("hvd_is_homogeneous",
                          [](const hvd::api::Topology& t) { return t.homogeneous ? 1 : 0; });
}

int hvd_mpi_threads_supported(void) {
  return hvd::capi::Ask("hvd_mpi_threads_supported", hvd::api::MpiThreadsSupported);
}

int hvd_mpi_enabled(void) {
  return hvd::capi::Ask("hvd_mpi_enabled", hvd::api::MpiEnabled);
}
int hvd_gloo_enabled(void) {
  return hvd::capi::Ask("hvd_gloo_enabled", hvd::api::GlooEnabled);
}

int hvd_mpi_built(void) {
  return hvd::capi::Ask("hvd_mpi_built",
                        [] { return hvd::api::BackendBuilt(hvd::api::Backend::kMpi); });
}
int hvd_gloo_built(void) {
  return hvd::capi::Ask("hvd_gloo_built",
                        [] { return hvd::api::BackendBuilt(hvd::api::Backend::kGloo); });
}
int hvd_nccl_built(void) {
  return hvd::capi::Guarded("hvd_nccl_built", 0, [] { return hvd::api::NcclVersionCode(); });
}
int hvd_cuda_built(void) {
  return hvd::capi::Ask("hvd_cuda_built", hvd::api::CudaBuilt);
}

}  // extern "C"
