# FindNCCL: NVIDIA's collective library, which ships no CMake config.
#
#   find_package(NCCL)  ->  NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY and the
#                           imported target NCCL::nccl
#
# Looks next to the CUDA toolkit (CUDAToolkit_INCLUDE_DIRS/LIBRARY_DIR, then
# /usr/local/cuda) and in the system paths; NCCL_ROOT is honoured by CMake.
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
