"""Read-only snapshots of the structs the library fills: plain dataclasses, detached from C."""

import dataclasses
from typing import Optional

from ._options import OVERFLOW_POLICIES

KV_SOURCES = {0: "new", 1: "resident", 2: "restored", 3: "rebuilt"}
STOP_REASONS = {1: "end_token", 2: "max_tokens", 3: "stop_string", 4: "context_end",
                5: "cancelled", 6: "out_of_memory", 7: "format_end"}
SESSION_STATES = {0: "active", 1: "idle", 2: "spilled"}
ROLES = {0: "system", 1: "user", 2: "assistant"}
# The names Engine.session(overflow=...) takes, by PARLEY_OVERFLOW_* value.
OVERFLOW_NAMES = {value: name for name, value in OVERFLOW_POLICIES.items()}


def _copy(cls, struct, **converted):
    """Same-named fields of `struct`, with `converted` overriding some."""
    values = {f.name: getattr(struct, f.name) for f in dataclasses.fields(cls)
              if f.name not in converted}
    return cls(**values, **converted)


def _text(raw):
    return raw.decode("utf-8", errors="replace")


@dataclasses.dataclass(frozen=True)
class TurnStats:
    """What one send(), continue_reply() or prepare() did. kv_source: "new", "resident",
    "restored" or "rebuilt". stop_reason, why the reply ended: "end_token" (the model ended
    it), "max_tokens", "stop_string", "context_end", "cancelled" (interrupt() or on_text),
    "out_of_memory" (the KV budget ran out), "format_end" (since 0.11: the reply is whole in
    its format; with format="json", the object closed), or None for prepare(), which replies
    nothing.
    stop_index: the index in `stop` of the stop string that ended the reply; None when none
    did. prompt_tokens: tokens of this turn's input (the template's and the message's);
    reused_tokens: tokens whose KV was already there (history, a shared prefix);
    computed_tokens: tokens prefilled in this turn; generated_tokens: tokens sampled, those
    a stop string dropped included. ttft_ms: from the call (a stream's first next()) to the
    first reply token. tpot_ms: the mean time per reply token after the first, measured by
    the clock, so the time on_text or a stream's loop body takes counts in it (generation
    waits for them). restore_ms: time spent bringing stored KV back."""
    prompt_tokens: int
    reused_tokens: int
    computed_tokens: int
    generated_tokens: int
    ttft_ms: float
    tpot_ms: float
    restore_ms: float
    kv_source: str
    stop_reason: Optional[str]
    stop_index: Optional[int]

    @classmethod
    def from_struct(cls, s):
        return _copy(cls, s, kv_source=KV_SOURCES.get(s.kv_source, str(s.kv_source)),
                     stop_reason=(STOP_REASONS.get(s.stop_reason, str(s.stop_reason))
                                  if s.stop_reason else None),
                     stop_index=s.stop_index if s.stop_index >= 0 else None)


@dataclasses.dataclass(frozen=True)
class EngineStats:
    """Engine-wide counters (Engine.stats). KV is held in blocks of 16 tokens (all layers).
    sessions_active: open sessions neither spilled nor idle (their KV, if any, in memory);
    sessions_idle: open sessions idle for idle_spill_ms or more, about to be spilled;
    sessions_spilled: open sessions whose KV is in the store only. kv_blocks_total: blocks the budget allows; kv_blocks_used: blocks held by
    sessions; kv_blocks_shared: blocks held by two or more sessions (a shared prefix);
    kv_blocks_cached: prefix blocks no session holds, kept for the next hit.
    kv_bytes_per_token: 2 x layers x KV heads x head_dim x bytes per element, plus scales;
    kv_bytes_resident: bytes of the used and cached blocks; kv_budget_bytes: the resident KV
    budget in force. prefix_hits: blocks found in the prefix cache; prefix_misses: lookups
    that found none. store_bytes: the size of the store file, 0 without a store.
    decode_steps (since 0.2): decode steps run, which sessions generating at the same time
    share; decode_tokens (since 0.2): tokens those steps computed, so decode_tokens /
    decode_steps is the mean number of sessions per step."""
    sessions_active: int
    sessions_idle: int
    sessions_spilled: int
    kv_blocks_total: int
    kv_blocks_used: int
    kv_blocks_shared: int
    kv_blocks_cached: int
    kv_bytes_per_token: int
    kv_bytes_resident: int
    kv_budget_bytes: int
    prefix_hits: int
    prefix_misses: int
    store_bytes: int
    decode_steps: int
    decode_tokens: int

    @classmethod
    def from_struct(cls, s):
        return _copy(cls, s)


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What the engine has loaded (Engine.model_info). name: the model's general.name, or
    its directory's name; architecture: e.g. "llama"; chat_template: the template a session
    that names none uses ("raw", "chatml", ...). n_vocab, n_layers, n_heads, n_kv_heads,
    head_dim, embedding_length and n_params describe the model; context_length: the context
    in force, in tokens (Engine(context=...) or the model's). backend: where it runs, "cpu",
    "cuda:0", ..."""
    name: str
    architecture: str
    chat_template: str
    n_vocab: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    embedding_length: int
    context_length: int
    n_params: int
    backend: str

    @classmethod
    def from_struct(cls, s):
        return _copy(cls, s, name=_text(s.name), architecture=_text(s.architecture),
                     chat_template=_text(s.chat_template), backend=_text(s.backend))


@dataclasses.dataclass(frozen=True)
class SessionInfo:
    """state: "active", "idle" or "spilled". overflow (since 0.8): the session's policy for a
    message that does not fit, "error" or "drop_oldest" (Session.overflow). chat_template
    (since 0.8): the template the session uses, e.g. "chatml" (the model's when it named
    none). n_turns: messages, the system prompt included (a user message and its reply are
    two); n_tokens: tokens in the conversation. kv_bytes_resident: bytes of the KV blocks the
    session holds in memory, blocks it shares with other sessions (a common prefix)
    included; 0 once it is spilled or suspended. kv_bytes_stored: bytes of its KV in the
    store, shared prefix blocks included; 0 without a store or before any is stored."""
    id: str
    n_turns: int
    n_tokens: int
    state: str
    kv_bytes_resident: int
    kv_bytes_stored: int
    # Since 0.8; last, so that positional construction from 0.7 code still lines up.
    overflow: str
    chat_template: str

    @classmethod
    def from_struct(cls, s):
        return _copy(cls, s, id=_text(s.id),
                     state=SESSION_STATES.get(s.state, str(s.state)),
                     overflow=OVERFLOW_NAMES.get(s.overflow, str(s.overflow)),
                     chat_template=_text(s.chat_template))


@dataclasses.dataclass(frozen=True)
class StoredSessionInfo:
    """A stored conversation, read from the store without opening it. created_unix_ms and
    updated_unix_ms (Unix time, milliseconds): when it was started and when its last change
    was committed; n_turns counts the system prompt. is_open: open in this engine (the store
    may lag a turn that failed to commit; Session.info has it as it is). kv_bytes_stored: its
    stored KV, shared prefix blocks included; 0 = none. same_model: its stored KV was computed
    by this engine's model with its kv_type, so it can come back rather than be recomputed
    (with no KV stored: the conversation was started with this engine's model)."""
    created_unix_ms: int
    updated_unix_ms: int
    n_turns: int
    is_open: bool
    kv_bytes_stored: int
    same_model: bool

    @classmethod
    def from_struct(cls, s):
        return _copy(cls, s, is_open=bool(s.is_open), same_model=bool(s.same_model))


@dataclasses.dataclass(frozen=True)
class TokenCount:
    """What a message would take, measured before it is sent. prompt_tokens: the tokens send()
    would add before its reply (the message with the template's markers and what closes the
    previous reply; last_stats.prompt_tokens of that send). context_left: the context's tokens
    then left for the reply; 0 means the message does not fit."""
    prompt_tokens: int
    context_left: int


@dataclasses.dataclass(frozen=True)
class ReplyScore:
    """How likely the model finds one reply (Session.score_replies). text: the reply as given.
    logprob: the natural log of the probability of exactly that reply, summed over its tokens
    (<= 0). n_tokens: the tokens scored, the reply's end included when it was scored."""
    text: str
    logprob: float
    n_tokens: int
