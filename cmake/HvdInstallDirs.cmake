# Where `cmake --install` and the .deb files put things, and the relative
# RPATHs that let every installed binary find libhvd from there. Included
# before the sub-folders so that their targets pick up the RPATH defaults.
#
# The layout below the prefix does not depend on the prefix, except for the
# Python folder (chosen at install time, see HVD_INSTALL_PYTHONDIR), so one
# build tree serves `cmake --install --prefix P`, DESTDIR installs and cpack
# (which installs into /usr).

# Debian multiarch for every prefix: /usr/lib/<triplet> is what the .deb files
# need, and /usr/local/lib/<triplet> is on Debian's loader path too.
if(NOT DEFINED CMAKE_INSTALL_LIBDIR AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS /etc/debian_version)
  set(CMAKE_INSTALL_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE} CACHE PATH "Object code libraries (LIBDIR)")
endif()
include(GNUInstallDirs)

set(HVD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/hvd)
set(HVD_INSTALL_JAVADIR ${CMAKE_INSTALL_DATADIR}/java)
set(HVD_INSTALL_JULIADIR ${CMAKE_INSTALL_DATADIR}/julia)
set(HVD_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/hvd)

# Python: Debian's python3 searches <prefix>/lib/python3/dist-packages for
# /usr (where Debian's own packages go) and lib/python3.X/dist-packages for
# /usr/local; other interpreters use their sysconfig "posix_prefix" scheme.
# Both Debian folders are three levels below the prefix, so the extension's
# RPATH is the same either way.
set(HVD_INSTALL_PYTHONDIR "" CACHE PATH
    "Folder of Python packages, relative to the prefix (empty: what the interpreter searches under the install prefix)")
if(IS_ABSOLUTE "${HVD_INSTALL_PYTHONDIR}")
  message(FATAL_ERROR "hvd: HVD_INSTALL_PYTHONDIR must be relative to the prefix")
elseif(HVD_INSTALL_PYTHONDIR)
  set(HVD_PYTHONDIRS ${HVD_INSTALL_PYTHONDIR} ${HVD_INSTALL_PYTHONDIR})
elseif(Python_EXECUTABLE)
  # Prints "<folder for /usr>;<folder for other prefixes>".
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c [[
import sys, sysconfig
if "deb_system" in sysconfig.get_scheme_names():
    print("lib/python3/dist-packages;lib/python%d.%d/dist-packages" % sys.version_info[:2], end="")
else:
    d = sysconfig.get_path("platlib", "posix_prefix", vars={"base": "", "platbase": ""}).lstrip("/")
    print("%s;%s" % (d, d), end="")
]]
    OUTPUT_VARIABLE HVD_PYTHONDIRS RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "hvd: cannot ask ${Python_EXECUTABLE} for its site-packages folder")
  endif()
else()
  set(HVD_PYTHONDIRS lib/python3/dist-packages lib/python3/dist-packages)
endif()
list(GET HVD_PYTHONDIRS 0 HVD_PYTHONDIR_SYSTEM)
list(GET HVD_PYTHONDIRS 1 HVD_PYTHONDIR_LOCAL)

# Runs first in every component's install, once the prefix is known (cpack
# installs into /usr, `cmake --install --prefix` may differ from the
# configured one): HVD_PREFIX_KIND is "system" for /usr, else "local", and
# HVD_PYTHONDIR the matching Python folder, which the bindings' rules use as
# DESTINATION "\${HVD_PYTHONDIR}".
install(CODE "
if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
  set(HVD_PREFIX_KIND system)
  set(HVD_PYTHONDIR \"${HVD_PYTHONDIR_SYSTEM}\")
else()
  set(HVD_PREFIX_KIND local)
  set(HVD_PYTHONDIR \"${HVD_PYTHONDIR_LOCAL}\")
endif()" ALL_COMPONENTS)

# hvd_origin_rpath(<var> <install dir relative to the prefix>): the RPATH
# entry that leads from a binary installed in that folder to libhvd's folder.
function(hvd_origin_rpath var dir)
  file(RELATIVE_PATH rel /prefix/${dir} /prefix/${CMAKE_INSTALL_LIBDIR})
  if(rel STREQUAL "")
    set(${var} "$ORIGIN" PARENT_SCOPE)
  else()
    set(${var} "$ORIGIN/${rel}" PARENT_SCOPE)
  endif()
endfunction()

# Installed programs (bin/) find libhvd relative to themselves: no
# LD_LIBRARY_PATH, whatever the prefix or DESTDIR. Libraries and the bindings
# set their own (see HvdInstall.cmake and bindings/*).
hvd_origin_rpath(CMAKE_INSTALL_RPATH ${CMAKE_INSTALL_BINDIR})
