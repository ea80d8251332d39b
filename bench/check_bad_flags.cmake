# Runs parley-bench with flag values it must refuse (out of range for the 32-bit fields they
# go to, below a flag's minimum, not numbers) and checks that each run fails at once, naming the
# flag, before any scenario runs; and that a flag it does not know is named as unknown, also
# without a value after it.
# Usage: cmake -DBENCH=path/to/parley-bench -P check_bad_flags.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT BENCH)
  message(FATAL_ERROR "pass -DBENCH=path/to/parley-bench")
endif()

# flag|value pairs; 4294967296 = 2^32 wraps to 0 in 32 bits, 4294967297 to 1.
set(cases
  "--concurrent|4294967296" "--prompt-tokens|4294967296" "--repeat|4294967296"
  "--tokens|4294967296" "--tokens|4294967297" "--sessions|4294967296" "--threads|2147483648"
  "--context|4294967296" "--spill-tokens|4294967297" "--turns|4294967296"
  "--turn-tokens|4294967296" "--system-tokens|4294967296" "--copy-mib|4294967296"
  "--repeat|0" "--tokens|1" "--sessions|1" "--seed|18446744073709551616" "--repeat|-1"
  "--repeat|2x")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" pair "${c}")
  list(GET pair 0 flag)
  list(GET pair 1 value)
  execute_process(
    COMMAND ${BENCH} --synthetic stories15m --threads 1 --scenario prefill ${flag} ${value}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
  if(rc EQUAL 0 OR NOT out STREQUAL "")
    message(FATAL_ERROR "${flag} ${value}: exit ${rc}, output '${out}': not refused")
  endif()
  if(NOT err MATCHES "^parley-bench: ${flag} needs an integer from [0-9]+ to [0-9]+, got '")
    message(FATAL_ERROR "${flag} ${value}: exit ${rc}, message '${err}'")
  endif()
endforeach()

foreach(args IN ITEMS "--bogus" "--bogus;1" "--versions")
  execute_process(COMMAND ${BENCH} --synthetic stories15m ${args}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
  list(GET args 0 flag)
  if(rc EQUAL 0 OR NOT err MATCHES "^parley-bench: unknown flag '${flag}' \\(see --help\\)")
    message(FATAL_ERROR "${args}: exit ${rc}, message '${err}'")
  endif()
endforeach()
execute_process(COMMAND ${BENCH} --version OUTPUT_VARIABLE out RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^parley [0-9]+\\.[0-9]+\\.[0-9]+\n$")
  message(FATAL_ERROR "--version: exit ${rc}, output '${out}'")
endif()
