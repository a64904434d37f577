# hvd.cdef: hvd.h's declarations in the form cffi's cdef() accepts (no
# preprocessor lines, DLPack's structs in front), generated at build time
# from the header by hvd_cdef.py. Installed as share/hvd/hvd.cdef; the
# Python binding copies it into its package for hvd.ffi.cdef().
if(NOT Python_EXECUTABLE)
  return()
endif()
set(HVD_CDEF_FILE ${PROJECT_BINARY_DIR}/share/hvd/hvd.cdef)
set(hvd_cdef_source ${PROJECT_SOURCE_DIR}/capi/include/hvd/hvd.h)
add_custom_command(
  OUTPUT ${HVD_CDEF_FILE}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/share/hvd
  COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/hvd_cdef.py ${hvd_cdef_source} ${HVD_CDEF_FILE}
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/hvd_cdef.py ${hvd_cdef_source}
  COMMENT "Generating hvd.cdef (cffi declarations) from hvd.h"
  VERBATIM)
add_custom_target(hvd_cdef ALL DEPENDS ${HVD_CDEF_FILE})
install(FILES ${HVD_CDEF_FILE} DESTINATION ${HVD_INSTALL_DATADIR} COMPONENT dev)
