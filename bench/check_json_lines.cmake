# Runs every parley-bench scenario on the small synthetic stories15m shape with tiny sizes and
# checks that every line of its output is a JSON object carrying every common key (listed in
# bench/RESULTS.md). A key may be null only where it does not apply to the scenario: the keys
# listed for a scenario below must hold a value. Timings are never checked; what they time is:
# no prefill or decode run may find another run's blocks in the prefix cache.
# Usage: cmake -DBENCH=path/to/parley-bench -P check_json_lines.cmake
cmake_minimum_required(VERSION 3.25)  # script mode: IN_LIST and string(JSON) need the policies
if(NOT BENCH)
  message(FATAL_ERROR "pass -DBENCH=path/to/parley-bench")
endif()

# Tiny sizes throughout: the shape of the output is the point, not its figures (a small copy
# loop, one pass per codec timing, one run each). Under AddressSanitizer the run took 35 s on
# one VM's two quiet cores and 157 s alone on a slower one: the timeout leaves room for a busy
# slow machine, and still ends a hang.
# Prompts of 40 tokens and more share whole blocks with the longer ones, which starts with the
# same words; 1000 and 2000 are both capped to the context; int8 is given twice.
execute_process(
  COMMAND ${BENCH} --synthetic stories15m --threads 1 --kv int8,int8 --repeat 2 --copy-mib 8
          --prompt-tokens 40,1000,2000 --context 40,1000,2000 --tokens 4 --turns 2 --turn-tokens 4
          --sessions 2 --system-tokens 16 --spill-tokens 48 --codec-min-s 0 --concurrent 1,2
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 450)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "parley-bench exited with ${rc}: ${err}")
endif()

set(common_keys scenario model backend threads kv weights prompt_tokens context_tokens
    generated_tokens prefill_tok_s decode_tok_s ttft_ms tpot_ms_median tpot_ms_p90
    kv_bytes_per_token peak_rss_bytes bandwidth_gbs decode_bandwidth_utilisation simd
    read_bandwidth_gbs decode_read_utilisation)
set(spill_keys spill_ms restore_ms reprefill_ms stored_bytes_per_token)
# The copy loop on either side of a decode line's timings (a CPU run measures them).
set(decode_keys bandwidth_before_gbs bandwidth_after_gbs decode_adjacent_utilisation)

# Keys that must not be null: on every line, then per scenario.
# simd: the run uses the default device, the CPU.
set(filled_everywhere scenario model backend threads kv weights kv_bytes_per_token
    peak_rss_bytes bandwidth_gbs simd read_bandwidth_gbs)
set(filled_prefill prompt_tokens generated_tokens prefill_tok_s ttft_ms)
set(filled_decode prompt_tokens context_tokens generated_tokens prefill_tok_s decode_tok_s
    ttft_ms tpot_ms_median tpot_ms_p90 decode_bandwidth_utilisation decode_read_utilisation
    ${decode_keys})
set(filled_turn prompt_tokens context_tokens generated_tokens prefill_tok_s decode_tok_s ttft_ms
    tpot_ms_median tpot_ms_p90)
set(filled_prefix)  # the per-session lines fill TTFT; the summary line has its own fields
set(filled_spill context_tokens ${spill_keys})
set(filled_kv-bytes context_tokens)
set(filled_codec)
set(filled_json-format)
set(filled_concurrent prompt_tokens context_tokens generated_tokens decode_tok_s ttft_ms
    tpot_ms_median tpot_ms_p90)
set(concurrent_keys sessions shared_steps decode_steps sessions_per_step)
set(scenarios prefill decode turn prefix spill kv-bytes codec concurrent json-format)
foreach(s IN LISTS scenarios)
  set(n_${s} 0)
endforeach()

string(REGEX REPLACE "\n$" "" out "${out}")
string(REPLACE ";" "\\;" out "${out}")  # a ';' inside the JSON must not split the list
string(REPLACE "\n" ";" lines "${out}")
foreach(line IN LISTS lines)
  string(JSON type ERROR_VARIABLE json_err TYPE "${line}")
  if(json_err OR NOT type STREQUAL "OBJECT")
    message(FATAL_ERROR "not a JSON object: '${line}' ${json_err}")
  endif()
  string(JSON skipped ERROR_VARIABLE no_skip GET "${line}" skipped)
  if(NOT no_skip)
    message(FATAL_ERROR "a scenario was skipped: ${line}")
  endif()
  string(JSON scenario GET "${line}" scenario)
  if(NOT scenario IN_LIST scenarios)
    message(FATAL_ERROR "unexpected scenario '${scenario}'")
  endif()
  math(EXPR n_${scenario} "${n_${scenario}} + 1")
  set(keys ${common_keys})
  if(scenario STREQUAL "spill")
    list(APPEND keys ${spill_keys})
  elseif(scenario STREQUAL "decode")
    list(APPEND keys ${decode_keys})
  elseif(scenario STREQUAL "concurrent")
    list(APPEND keys ${concurrent_keys})
    list(APPEND filled_concurrent ${concurrent_keys})
  endif()
  foreach(key IN LISTS keys)
    string(JSON key_type ERROR_VARIABLE json_err TYPE "${line}" ${key})
    if(json_err)
      message(FATAL_ERROR "line lacks '${key}': ${line}")
    endif()
    if(key_type STREQUAL "NULL" AND (key IN_LIST filled_everywhere OR key IN_LIST filled_${scenario}))
      message(FATAL_ERROR "'${key}' is null in a ${scenario} line: ${line}")
    endif()
  endforeach()
  string(JSON model GET "${line}" model)
  if(NOT model STREQUAL "synthetic:stories15m")
    message(FATAL_ERROR "unexpected model '${model}'")
  endif()
  if(scenario STREQUAL "prefill" OR scenario STREQUAL "decode")
    # Each run is timed on its own: the whole prompt computed, none of it found cached.
    string(JSON reused ERROR_VARIABLE json_err GET "${line}" reused_tokens)
    if(json_err OR NOT reused EQUAL 0)
      message(FATAL_ERROR "a ${scenario} run reused cached tokens (${reused}): ${line}")
    endif()
  endif()
  if(scenario STREQUAL "decode" OR scenario STREQUAL "turn"
     OR scenario STREQUAL "concurrent")
    string(JSON generated GET "${line}" generated_tokens)
    if(NOT generated EQUAL 4)
      message(FATAL_ERROR "${scenario} generated ${generated} tokens, not the 4 asked: ${line}")
    endif()
  endif()
endforeach()

# prefill and decode: 40, and 1000 and 2000 capped to the same length; turn: one line a turn;
# prefix: two sessions, a prepared one and a summary; spill: one length; kv-bytes: one KV type;
# codec: four zstd levels, with and without the filter; concurrent: 1 and 2 sessions, steps
# shared or not, and a prompt beside a generating session; json-format: five reply states
# without a schema and five with one.
set(expected prefill 2 decode 2 turn 2 prefix 4 spill 1 kv-bytes 1 codec 8 concurrent 5
    json-format 10)
set(report "")
while(expected)
  list(POP_FRONT expected s n)
  if(NOT n_${s} EQUAL n)
    message(FATAL_ERROR "expected ${n} ${s} lines, got ${n_${s}}")
  endif()
  string(APPEND report " ${s}=${n}")
endwhile()
message(STATUS "parley-bench printed the expected lines:${report}")
