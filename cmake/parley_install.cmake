# `cmake --install`: libparley.so with its SONAME links, parley.h, the CUDA module when it was
# built (libparley_cuda.so), and what lets other builds find them: a CMake package (find_package(Parley) -> Parley::parley) and parley.pc.
#
# Only the shared library is installed. parley_static is an archive of nothing that links the
# layers' own archives and their third-party libraries, so installing it would mean exporting
# every internal target; programs outside this tree link the shared library and its C ABI.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PARLEY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Parley)

install(TARGETS parley EXPORT ParleyTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})  # the installed target's include dir
install(FILES ${PROJECT_SOURCE_DIR}/include/parley.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The CUDA module goes beside libparley, which looks for it there. It finds cuBLAS where this
# build found it (the CUDA Toolkit's library folder), as the build tree's copy does.
if(TARGET parley_cuda)
  set_target_properties(parley_cuda PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  install(TARGETS parley_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(EXPORT ParleyTargets NAMESPACE Parley:: FILE ParleyTargets.cmake
  DESTINATION ${PARLEY_INSTALL_CMAKEDIR})
# The package files are made for the installed tree only, in a folder of the build tree that
# find_package does not search: found there (Parley_DIR=build), they would name a
# ParleyTargets.cmake the build tree does not have.
set(parley_package_dir ${PROJECT_BINARY_DIR}/installed-package)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ParleyConfig.cmake.in
  ${parley_package_dir}/ParleyConfig.cmake INSTALL_DESTINATION ${PARLEY_INSTALL_CMAKEDIR})
# Every 0.x release shares the SONAME libparley.so.0: a later 0.y serves a request for an
# earlier one of the same major version (0.9 for 0.8, not 0.8 for 0.9), as the header's
# PARLEY_VERSION rule says.
write_basic_package_version_file(${parley_package_dir}/ParleyConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${parley_package_dir}/ParleyConfig.cmake
  ${parley_package_dir}/ParleyConfigVersion.cmake DESTINATION ${PARLEY_INSTALL_CMAKEDIR})

# parley.pc finds its prefix from its own place (${pcfiledir}), so the tree still works when
# installed with `cmake --install --prefix` elsewhere than CMAKE_INSTALL_PREFIX, or moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(PARLEY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
  set(PARLEY_PC_PREFIX "\${pcfiledir}/${pc_to_prefix}")
endif()
set(PARLEY_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
set(PARLEY_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
foreach(dir PARLEY_PC_LIBDIR PARLEY_PC_INCLUDEDIR)
  if(NOT IS_ABSOLUTE "${${dir}}")
    set(${dir} "\${prefix}/${${dir}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/parley.pc.in ${PROJECT_BINARY_DIR}/parley.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/parley.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
