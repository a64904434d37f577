# Installs libhvd (component lib), and what a C/C++ consumer needs (component
# dev): the header, the SONAME-less link, a CMake package (find_package(hvd)
# -> hvd::hvd) and a pkg-config file. The bindings and tools install
# themselves; HvdPackaging.cmake maps the components to .deb files.
include(CMakePackageConfigHelpers)

# libhvd's own dependencies live in the system's folders (and CUDA's in its
# ld.so.conf entry), so the library itself needs no RPATH.
set_target_properties(hvd PROPERTIES INSTALL_RPATH "")
install(TARGETS hvd EXPORT hvdTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/capi/include/hvd/hvd.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hvd COMPONENT dev)

install(EXPORT hvdTargets NAMESPACE hvd:: DESTINATION ${HVD_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hvdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hvdConfig.cmake INSTALL_DESTINATION ${HVD_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hvdConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hvdConfig.cmake ${PROJECT_BINARY_DIR}/hvdConfigVersion.cmake
        DESTINATION ${HVD_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config: relocatable (the prefix is found from the .pc file's folder).
# Programs linked with its flags run without LD_LIBRARY_PATH: outside /usr
# it adds an RPATH to libhvd's folder; in /usr (the .deb files) the folder is
# the loader's own and an RPATH would only be noise. The choice is made at
# install time, when the prefix is known (HvdInstallDirs.cmake).
file(RELATIVE_PATH HVD_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" HVD_PC_PREFIX "\${pcfiledir}/${HVD_PC_PREFIX}")
foreach(kind system local)
  if(kind STREQUAL "local")
    set(HVD_PC_RPATH " -Wl,-rpath,\${libdir}")
  else()
    set(HVD_PC_RPATH "")
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/hvd.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${kind}/hvd.pc @ONLY)
endforeach()
install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/\${HVD_PREFIX_KIND}/hvd.pc"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
