# Debian packages: `cpack -G DEB` in a build tree writes one .deb per install
# component (docs/install.md):
#   lib    -> libhvd1      libhvd.so.1 (+ the SONAME link)
#   dev    -> libhvd-dev   hvd.h, torch.hpp, libhvd.so, CMake package, hvd.pc, hvd.cdef, Julia package
#   tools  -> hvd-tools    hvdrun, hvd_timeline
#   python -> python3-hvd  the Python package
#   java   -> libhvd-java  hvd.jar, libhvd_jni.so
# The packages install into /usr whatever the configured prefix.
# dpkg-shlibdeps derives the shared-library dependencies of the binaries
# (libopenmpi3, libgloo0, libssl3, libstdc++6, ...); the lists below add what
# it cannot see: hvd's own packages, Python, numpy, Java, DLPack's header.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hvd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hvd developers <hvd@localhost>")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(hvd_deb_version ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})
set(hvd_lib_package libhvd${PROJECT_VERSION_MAJOR})

# dpkg-shlibdeps must find libhvd.so.1 (needed by the bindings) in the build
# tree, and CUDA's libraries where the toolkit is (they come from no Debian
# package, so it names no package for them: see docs/install.md).
get_target_property(hvd_lib_dir hvd BINARY_DIR)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${hvd_lib_dir})
if(HVD_WITH_CUDA)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
endif()
if(HVD_WITH_NCCL)
  get_filename_component(nccl_dir ${NCCL_LIBRARY} DIRECTORY)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${nccl_dir})
endif()

set(summary "collectives for data-parallel deep learning behind one C ABI")
set(long "hvd does what Horovod does (background negotiation, tensor fusion, MPI, Gloo
and NCCL backends, timeline, autotune, elastic training) behind one stable C ABI.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${hvd_lib_package})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# libhvd1's shlibs file: programs packaged against it get "libhvd1 (>= this
# version)" from dpkg-shlibdeps. (CPack's GENERATE_SHLIBS would apply to every
# package and warn about the unversioned JNI and Python modules.)
file(WRITE ${PROJECT_BINARY_DIR}/deb/shlibs
     "libhvd ${PROJECT_VERSION_MAJOR} ${hvd_lib_package} (>= ${hvd_deb_version})\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/shlibs)
set(CPACK_COMPONENT_LIB_DESCRIPTION "${summary} - library\n${long}\nThis package holds the shared library libhvd.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libhvd-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${hvd_lib_package} (= ${hvd_deb_version}), libdlpack-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libtorch-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "${summary} - development files\n${long}\nThis package holds the headers hvd/hvd.h and hvd/torch.hpp (for LibTorch programs), the CMake package (find_package(hvd)), the pkg-config file, cffi declarations (hvd.cdef) and the Julia package Hvd.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME hvd-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "openmpi-bin")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "openssh-client")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "${summary} - tools\n${long}\nThis package holds hvdrun (the launcher and rendezvous server) and hvd_timeline (timeline summaries).")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-hvd)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
# The extension is built for one Python version (its file name says which).
math(EXPR next_minor "${Python_VERSION_MINOR} + 1")
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "${hvd_lib_package} (= ${hvd_deb_version}), python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}~), python3 (<< ${Python_VERSION_MAJOR}.${next_minor}), python3-numpy")
set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-torch, python3-cffi, python3-mpi4py")
# py3compile after installing, py3clean before removing (as dh_python3 does).
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/deb/python/postinst
    ${CMAKE_CURRENT_LIST_DIR}/deb/python/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "${summary} - Python 3\n${long}\nThis package holds the Python module hvd (numpy, torch, DLPack) and hvd.torch.")

# Horovod's names (import horovod.torch, horovodrun) over hvd: a package of
# its own so that installing hvd never shadows a real Horovod.
set(CPACK_DEBIAN_HOROVOD_COMPAT_PACKAGE_NAME python3-hvd-horovod-compat)
set(CPACK_DEBIAN_HOROVOD_COMPAT_PACKAGE_SECTION python)
set(CPACK_DEBIAN_HOROVOD_COMPAT_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_HOROVOD_COMPAT_PACKAGE_DEPENDS "python3-hvd (= ${hvd_deb_version}), hvd-tools (= ${hvd_deb_version})")
set(CPACK_DEBIAN_HOROVOD_COMPAT_PACKAGE_CONFLICTS "python3-horovod")
set(CPACK_COMPONENT_HOROVOD_COMPAT_DESCRIPTION "${summary} - Horovod compatibility\n${long}\nThis package holds the Python package horovod (horovod.torch and its modules as names over hvd.torch) and horovodrun (hvdrun under Horovod's name).")

set(CPACK_DEBIAN_JAVA_PACKAGE_NAME libhvd-java)
set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
set(CPACK_DEBIAN_JAVA_PACKAGE_DEPENDS "${hvd_lib_package} (= ${hvd_deb_version}), default-jre-headless | java11-runtime-headless")
set(CPACK_COMPONENT_JAVA_DESCRIPTION "${summary} - Java\n${long}\nThis package holds hvd.jar (org.hvd) and its JNI library.")

# Only the components this build has (no Python or Java binding: no package).
set(CPACK_COMPONENTS_ALL lib dev tools)
if(TARGET hvd_python)
  list(APPEND CPACK_COMPONENTS_ALL python horovod_compat)
endif()
if(TARGET hvd_java)
  list(APPEND CPACK_COMPONENTS_ALL java)
endif()
include(CPack)
