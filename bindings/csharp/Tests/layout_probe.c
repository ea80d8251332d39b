/* Prints the size of every struct in parley.h and the offset of each of its fields, as this
 * platform's C compiler lays them out, for the C# layout test to compare against:
 *   <struct> <size>
 *   <struct>.<field> <offset>                                                        */
#include <stddef.h>
#include <stdio.h>

#include "parley.h"

#define SIZE(T) printf("%s %zu\n", #T, sizeof(T))
#define FIELD(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))

int main(void) {
  SIZE(parley_engine_options);
  FIELD(parley_engine_options, struct_size);
  FIELD(parley_engine_options, model_path);
  FIELD(parley_engine_options, store_path);
  FIELD(parley_engine_options, device);
  FIELD(parley_engine_options, n_threads);
  FIELD(parley_engine_options, kv_type);
  FIELD(parley_engine_options, kv_budget_bytes);
  FIELD(parley_engine_options, idle_spill_ms);
  FIELD(parley_engine_options, context_length);
  FIELD(parley_engine_options, on_load_progress);
  FIELD(parley_engine_options, load_progress_user);

  SIZE(parley_engine_stats);
  FIELD(parley_engine_stats, struct_size);
  FIELD(parley_engine_stats, sessions_active);
  FIELD(parley_engine_stats, sessions_idle);
  FIELD(parley_engine_stats, sessions_spilled);
  FIELD(parley_engine_stats, reserved0);
  FIELD(parley_engine_stats, kv_blocks_total);
  FIELD(parley_engine_stats, kv_blocks_used);
  FIELD(parley_engine_stats, kv_blocks_shared);
  FIELD(parley_engine_stats, kv_blocks_cached);
  FIELD(parley_engine_stats, kv_bytes_per_token);
  FIELD(parley_engine_stats, kv_bytes_resident);
  FIELD(parley_engine_stats, kv_budget_bytes);
  FIELD(parley_engine_stats, prefix_hits);
  FIELD(parley_engine_stats, prefix_misses);
  FIELD(parley_engine_stats, store_bytes);
  FIELD(parley_engine_stats, decode_steps);
  FIELD(parley_engine_stats, decode_tokens);

  SIZE(parley_model_info);
  FIELD(parley_model_info, struct_size);
  FIELD(parley_model_info, name);
  FIELD(parley_model_info, architecture);
  FIELD(parley_model_info, chat_template);
  FIELD(parley_model_info, n_vocab);
  FIELD(parley_model_info, n_layers);
  FIELD(parley_model_info, n_heads);
  FIELD(parley_model_info, n_kv_heads);
  FIELD(parley_model_info, head_dim);
  FIELD(parley_model_info, embedding_length);
  FIELD(parley_model_info, context_length);
  FIELD(parley_model_info, reserved0);
  FIELD(parley_model_info, n_params);
  FIELD(parley_model_info, backend);

  SIZE(parley_session_options);
  FIELD(parley_session_options, struct_size);
  FIELD(parley_session_options, id);
  FIELD(parley_session_options, system_prompt);
  FIELD(parley_session_options, chat_template);
  FIELD(parley_session_options, cache_scope);
  FIELD(parley_session_options, overflow);
  FIELD(parley_session_options, reserved0);

  SIZE(parley_session_info);
  FIELD(parley_session_info, struct_size);
  FIELD(parley_session_info, id);
  FIELD(parley_session_info, n_turns);
  FIELD(parley_session_info, n_tokens);
  FIELD(parley_session_info, state);
  FIELD(parley_session_info, overflow);
  FIELD(parley_session_info, kv_bytes_resident);
  FIELD(parley_session_info, kv_bytes_stored);
  FIELD(parley_session_info, chat_template);

  SIZE(parley_stored_session_info);
  FIELD(parley_stored_session_info, struct_size);
  FIELD(parley_stored_session_info, created_unix_ms);
  FIELD(parley_stored_session_info, updated_unix_ms);
  FIELD(parley_stored_session_info, n_turns);
  FIELD(parley_stored_session_info, is_open);
  FIELD(parley_stored_session_info, kv_bytes_stored);
  FIELD(parley_stored_session_info, same_model);
  FIELD(parley_stored_session_info, reserved0);

  SIZE(parley_turn);
  FIELD(parley_turn, struct_size);
  FIELD(parley_turn, text);
  FIELD(parley_turn, role);
  FIELD(parley_turn, n_tokens);

  SIZE(parley_generate_options);
  FIELD(parley_generate_options, struct_size);
  FIELD(parley_generate_options, seed);
  FIELD(parley_generate_options, max_tokens);
  FIELD(parley_generate_options, temperature);
  FIELD(parley_generate_options, top_k);
  FIELD(parley_generate_options, top_p);
  FIELD(parley_generate_options, min_p);
  FIELD(parley_generate_options, repeat_penalty);
  FIELD(parley_generate_options, repeat_last_n);
  FIELD(parley_generate_options, ignore_eos);
  FIELD(parley_generate_options, stop);
  FIELD(parley_generate_options, n_stop);
  FIELD(parley_generate_options, reserved0);
  FIELD(parley_generate_options, reply_prefix);
  FIELD(parley_generate_options, logit_bias);
  FIELD(parley_generate_options, n_logit_bias);
  FIELD(parley_generate_options, format);
  FIELD(parley_generate_options, json_schema);

  SIZE(parley_logit_bias);
  FIELD(parley_logit_bias, token);
  FIELD(parley_logit_bias, bias);

  SIZE(parley_turn_stats);
  FIELD(parley_turn_stats, struct_size);
  FIELD(parley_turn_stats, prompt_tokens);
  FIELD(parley_turn_stats, reused_tokens);
  FIELD(parley_turn_stats, computed_tokens);
  FIELD(parley_turn_stats, generated_tokens);
  FIELD(parley_turn_stats, ttft_ms);
  FIELD(parley_turn_stats, tpot_ms);
  FIELD(parley_turn_stats, restore_ms);
  FIELD(parley_turn_stats, kv_source);
  FIELD(parley_turn_stats, reserved0);
  FIELD(parley_turn_stats, stop_reason);
  FIELD(parley_turn_stats, stop_index);
  return 0;
}
