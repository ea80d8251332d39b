# The CPU decode kernels lean on software prefetch hints, and GCC deletes a call to an
# out-of-line function that only prefetches (it counts as free of side effects), silently:
# the kernels stay correct and only get slower. This checks that the compiled attention and
# Q8_0 product kernels still hold prefetch instructions (the F32/F16/BF16 products read tiled
# copies in address order and ask for nothing).
# Usage: cmake -DOBJDUMP=path -DOBJECTS="a.o;b.o;..." -P check_prefetch_hints.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT OBJDUMP OR NOT OBJECTS)
  message(FATAL_ERROR "pass -DOBJDUMP=path/to/objdump -DOBJECTS=<object files>")
endif()

set(kernels attention_kernels matmul_q8_kernels)
foreach(kernel ${kernels})
  set(object "")
  foreach(candidate ${OBJECTS})
    if(candidate MATCHES "/${kernel}\\.cpp\\.o(bj)?$")
      set(object ${candidate})
    endif()
  endforeach()
  if(NOT object)
    message(FATAL_ERROR "no object file for ${kernel} among the backend's objects")
  endif()
  execute_process(COMMAND ${OBJDUMP} -d ${object}
    OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} -d ${object} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "prefetch(t0|nta)" hints "${listing}")
  list(LENGTH hints count)
  if(count EQUAL 0)
    message(FATAL_ERROR "${kernel}: no prefetch instruction in ${object}; a hint was compiled away")
  endif()
  # The far hints into L2 (prefetch_to_l2) of every kernel's weight or K/V stream.
  string(REGEX MATCHALL "prefetcht1" far_hints "${listing}")
  list(LENGTH far_hints far_count)
  if(far_count EQUAL 0)
    message(FATAL_ERROR "${kernel}: no prefetcht1 in ${object}; the far hints were compiled away")
  endif()
  message(STATUS "${kernel}: ${count} near and ${far_count} far prefetch instructions")
endforeach()
