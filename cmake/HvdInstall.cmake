# Installs the header, libhvd.so, a CMake package (find_package(hvd) ->
# hvd::hvd) and a pkg-config file.
include(CMakePackageConfigHelpers)
install(TARGETS hvd EXPORT hvdTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/capi/include/hvd/hvd.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hvd)
install(EXPORT hvdTargets NAMESPACE hvd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hvd)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hvdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hvdConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hvd)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hvdConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hvdConfig.cmake ${PROJECT_BINARY_DIR}/hvdConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hvd)
configure_file(${PROJECT_SOURCE_DIR}/cmake/hvd.pc.in ${PROJECT_BINARY_DIR}/hvd.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hvd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
