# HVD_VERSION: the version hvd.h declares (HVD_VERSION_MAJOR/MINOR/PATCH),
# the one place it is written; the project, the SONAME, the .deb files and
# the Python package all take it from there.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../capi/include/hvd/hvd.h hvd_version_defines
     REGEX "^#define HVD_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
set(HVD_VERSION "")
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "HVD_VERSION_${part} +([0-9]+)" found "${hvd_version_defines}")
  if(NOT found)
    message(FATAL_ERROR "hvd.h does not define HVD_VERSION_${part}")
  endif()
  string(APPEND HVD_VERSION ".${CMAKE_MATCH_1}")
endforeach()
string(SUBSTRING "${HVD_VERSION}" 1 -1 HVD_VERSION)
