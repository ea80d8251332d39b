// Figures the library reports: for one turn (or the work Session.Prepare did ahead of one),
// and for a whole engine.
namespace Parley
{
    public sealed class TurnStats
    {
        internal TurnStats(NativeTurnStats s)
        {
            PromptTokens = (int)s.prompt_tokens;
            ReusedTokens = (int)s.reused_tokens;
            ComputedTokens = (int)s.computed_tokens;
            GeneratedTokens = (int)s.generated_tokens;
            TtftMs = s.ttft_ms;
            TpotMs = s.tpot_ms;
            RestoreMs = s.restore_ms;
            KvSource = (KvSource)s.kv_source;
            StopReason = (StopReason)s.stop_reason;
            StopIndex = s.stop_index;
        }

        public int PromptTokens { get; private set; }     // this turn's input (template + user text)
        public int ReusedTokens { get; private set; }     // tokens whose KV was already there
        public int ComputedTokens { get; private set; }   // tokens prefilled in this turn
        public int GeneratedTokens { get; private set; }  // also those a stop string dropped
        public double TtftMs { get; private set; }        // from the call to the first reply token
        public double TpotMs { get; private set; }        // mean time per reply token after the first
        public double RestoreMs { get; private set; }     // time spent bringing stored KV back
        public KvSource KvSource { get; private set; }
        public StopReason StopReason { get; private set; }
        // The index in GenerateOptions.Stop of the stop string that ended the reply; -1 when
        // none did (as IndexOf says "not found").
        public int StopIndex { get; private set; }
    }

    public sealed class EngineStats
    {
        internal EngineStats(NativeEngineStats s)
        {
            SessionsActive = (int)s.sessions_active;
            SessionsIdle = (int)s.sessions_idle;
            SessionsSpilled = (int)s.sessions_spilled;
            KvBlocksTotal = (long)s.kv_blocks_total;
            KvBlocksUsed = (long)s.kv_blocks_used;
            KvBlocksShared = (long)s.kv_blocks_shared;
            KvBlocksCached = (long)s.kv_blocks_cached;
            KvBytesPerToken = (long)s.kv_bytes_per_token;
            KvBytesResident = (long)s.kv_bytes_resident;
            KvBudgetBytes = (long)s.kv_budget_bytes;
            PrefixHits = (long)s.prefix_hits;
            PrefixMisses = (long)s.prefix_misses;
            StoreBytes = (long)s.store_bytes;
            DecodeSteps = (long)s.decode_steps;
            DecodeTokens = (long)s.decode_tokens;
        }

        public int SessionsActive { get; private set; }   // open, neither spilled nor idle
        public int SessionsIdle { get; private set; }     // ... idle long enough to be spilled soon
        public int SessionsSpilled { get; private set; }  // open sessions whose KV is in the store only
        public long KvBlocksTotal { get; private set; }
        public long KvBlocksUsed { get; private set; }
        public long KvBlocksShared { get; private set; }
        public long KvBlocksCached { get; private set; }
        public long KvBytesPerToken { get; private set; }
        public long KvBytesResident { get; private set; }
        public long KvBudgetBytes { get; private set; }
        public long PrefixHits { get; private set; }
        public long PrefixMisses { get; private set; }
        public long StoreBytes { get; private set; }
        public long DecodeSteps { get; private set; }     // sessions generating at once share them
        public long DecodeTokens { get; private set; }    // / DecodeSteps = sessions per step
    }
}
