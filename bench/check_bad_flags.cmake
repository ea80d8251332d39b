# Runs parley-bench with flag values it must refuse (out of range for the 32-bit fields they
# go to, below a flag's minimum or above its maximum, not numbers or not finite, empty lists or
# list items) and checks that each run fails at once, naming the flag, before any scenario runs;
# and that a flag it does not know is named as unknown, also without a value after it.
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
  "--repeat|0" "--tokens|1" "--turn-tokens|1" "--sessions|1" "--seed|18446744073709551616"
  "--repeat|-1" "--repeat|2x" "--copy-mib|65537" "--copy-mib|4294967295" "--threads|1025"
  "--threads|99999")
# The same for values refused with other messages, each case flag|value|message (a regex).
# Seconds must be finite (a codec timing of "inf" seconds never ends) and at most an hour.
set(seconds "needs seconds from 0 to 3600, got '")
# An empty list is not "the default": --scenario '' must not run every scenario.
set(no_value "needs at least one value$")
set(between_commas "needs a value between commas, got '")
set(other_cases
  "--codec-min-s|inf|${seconds}" "--codec-min-s|-inf|${seconds}"
  "--codec-min-s|nan|${seconds}" "--codec-min-s|1e999|${seconds}"
  "--codec-min-s|-1|${seconds}" "--codec-min-s|3601|${seconds}"
  "--scenario||${no_value}" "--kv||${no_value}" "--context||${no_value}"
  "--concurrent||${no_value}" "--scenario|prefill,|${between_commas}"
  "--scenario|,prefill|${between_commas}" "--kv|int8,,f16|${between_commas}"
  "--prompt-tokens|16,,32|${between_commas}" "--spill-tokens|48,|${between_commas}")
foreach(c IN LISTS cases)
  list(APPEND other_cases "${c}|needs an integer from [0-9]+ to [0-9]+, got '")
endforeach()
# Minimums and maximums said exactly: a reply needs two tokens for TPOT, and the library takes
# at most 1024 threads.
list(APPEND other_cases "--turn-tokens|1|needs an integer from 2 to 4294967295, got '1'"
  "--threads|1025|needs an integer from 0 to 1024, got '1025'")

foreach(c IN LISTS other_cases)
  string(REPLACE "|" ";" fields "${c}")
  list(GET fields 0 flag)
  list(GET fields 1 value)
  list(GET fields 2 expected)
  # Quoted, so that an empty value is still passed as an argument.
  execute_process(
    COMMAND ${BENCH} --synthetic stories15m --threads 1 --scenario prefill ${flag} "${value}"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
  if(rc EQUAL 0 OR NOT out STREQUAL "")
    message(FATAL_ERROR "${flag} '${value}': exit ${rc}, output '${out}': not refused")
  endif()
  string(STRIP "${err}" err)
  if(NOT err MATCHES "^parley-bench: ${flag} ${expected}")
    message(FATAL_ERROR "${flag} '${value}': exit ${rc}, message '${err}'")
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
