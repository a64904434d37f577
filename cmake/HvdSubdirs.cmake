# hvd_add_subdirectories(): adds every sub-folder of the current source
# folder that has a CMakeLists.txt, so a new program, binding, example or
# test area is one new folder and no edit elsewhere.
function(hvd_add_subdirectories)
  file(GLOB subdirs LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(dir ${subdirs})
    if(IS_DIRECTORY ${dir} AND EXISTS ${dir}/CMakeLists.txt)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()
