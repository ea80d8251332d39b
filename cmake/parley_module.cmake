# parley_module(NAME): one engine layer as an object library built from the *.cpp files of
# the calling directory (and its subdirectories given as extra arguments).
function(parley_module name)
  set(patterns ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(sub ${ARGN})
    list(APPEND patterns ${CMAKE_CURRENT_SOURCE_DIR}/${sub}/*.cpp)
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${patterns})
  if(NOT sources)
    set(sources ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
  endif()
  add_library(${name} OBJECT ${sources})
  target_include_directories(${name} PUBLIC
    ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${name} PUBLIC PARLEY_BUILD)
  target_link_libraries(${name} PRIVATE parley_warnings)
endfunction()
