"""Chat templates against the Jinja templates their model families publish.

Each conversation is rendered with jinja2 from the chat_template of the family's
tokenizer_config.json (as transformers renders it: trim_blocks, lstrip_blocks), and the result
tokenized with sentencepiece and the Llama 2 tokenizer, each run of text between special tokens
on its own (as llama.cpp does). Parley's ids for the same conversation, imported or written
with add_exchange, must be the same. The model is a tiny one with random weights built here
from the Llama 2 vocabulary (tools in ../shared), with ChatML's markers added as control tokens.
"""

import importlib
import json
import os
import re
import sys

import pytest

from conftest import SHARED_DIR, shared_file


def reference_module(name):
    """Skips without it (Debian's python3-<name>, which scripts/install-deps.sh installs);
    under CI=true, where it must be there, fails instead."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(name)
    return pytest.importorskip(name)


jinja2 = reference_module("jinja2")
np = reference_module("numpy")
spm = reference_module("sentencepiece")

import parley  # noqa: E402

# meta-llama/Llama-2-7b-chat-hf
LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}"
    "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
    "{% endif %}{% endfor %}")

# teknium/OpenHermes-2.5-Mistral-7B
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}")

# HuggingFaceH4/zephyr-7b-beta
ZEPHYR = (
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
    "{% endfor %}")

IM_START, IM_END = 32000, 32001  # the markers added to the Llama 2 vocabulary

SYSTEM = "You are a helpful assistant."
# (system prompt or None, [(user, reply)], the last user message)
CONVERSATIONS = {
    "one turn": (None, [], "Hello there!"),
    "system, one turn": (SYSTEM, [], "Hello there!"),
    "system, three turns": (SYSTEM, [("Hello there!", "Hi! How can I help?"),
                                     ("What is 2+2?", "It is 4.")], "Thanks"),
    "three turns": (None, [("Hello there!", "Hi! How can I help?"),
                           ("What is 2+2?", "It is 4.")], "Thanks"),
    "spaces around a message": (None, [], "  Hello  "),
    "a message's last newline": (None, [], "Hello\n"),
    "a message's first newline": (None, [], "\nHello"),
    "system, spaces around a message": (SYSTEM, [], "  Hello  "),
    "system, a message of spaces": (SYSTEM, [], "  \n"),
    "a message of spaces": (None, [], "   "),
    "non-ASCII": ("Système: sois gentil 😊", [], "Grüße 👋 日本語 — ok"),
    "spaces around a reply": (None, [("Hi", "  Yo there  ")], "Next"),
    "newlines in a reply": (None, [("Hi", "Yo\nthere\n")], "Next"),
    "a reply's first newline": (None, [("Hi", "\nYo")], "Next"),
    "a reply's first word": (None, [("Hi", "Hello there")], "Next"),
    "a reply of punctuation first": (None, [("Hi", "...well, ok")], "Next"),
    "a non-ASCII reply": (None, [("Hi", "日本語です")], "Next"),
    "an empty reply": (None, [("Hi", "")], "Next"),
    "a reply of whitespace": (SYSTEM, [("Hi", " \n "), ("More", "Sure.")], "Next"),
}


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(
        model_file=str(shared_file("tokenizers/llama2/tokenizer.model")))


def write_model(path, sp, added):
    """A one-layer llama with random weights and the Llama 2 vocabulary, plus `added` control
    tokens, as GGUF."""
    sys.path.insert(0, str(SHARED_DIR / "tools"))
    import gguf_io as g  # noqa: E402 (../shared/tools)
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                     6 if sp.is_byte(i) else 1)
    tokens += added
    scores += [0.0] * len(added)
    types += [3] * len(added)
    n_vocab, dim, hidden, heads = len(tokens), 32, 64, 2
    rng = np.random.default_rng(0)

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    w = g.GGUFWriter(alignment=32)
    for key, kind, value in [
            ("general.architecture", g.T_STRING, "llama"), ("general.alignment", g.T_UINT32, 32),
            ("llama.vocab_size", g.T_UINT32, n_vocab), ("llama.context_length", g.T_UINT32, 512),
            ("llama.embedding_length", g.T_UINT32, dim), ("llama.block_count", g.T_UINT32, 1),
            ("llama.feed_forward_length", g.T_UINT32, hidden),
            ("llama.attention.head_count", g.T_UINT32, heads),
            ("llama.attention.layer_norm_rms_epsilon", g.T_FLOAT32, 1e-5),
            ("tokenizer.ggml.model", g.T_STRING, "llama"),
            ("tokenizer.ggml.bos_token_id", g.T_UINT32, 1),
            ("tokenizer.ggml.eos_token_id", g.T_UINT32, 2),
            ("tokenizer.ggml.unknown_token_id", g.T_UINT32, 0)]:
        w.add(key, kind, value)
    w.add("tokenizer.ggml.tokens", g.T_ARRAY, tokens, g.T_STRING)
    w.add("tokenizer.ggml.scores", g.T_ARRAY, scores, g.T_FLOAT32)
    w.add("tokenizer.ggml.token_type", g.T_ARRAY, types, g.T_INT32)
    w.add_tensor("token_embd.weight", weights(n_vocab, dim), g.GGML_F32)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(dim, np.float32), g.GGML_F32)
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor("blk.0.%s.weight" % name, weights(dim, dim), g.GGML_F32)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(dim, np.float32), g.GGML_F32)
    w.add_tensor("blk.0.ffn_gate.weight", weights(hidden, dim), g.GGML_F32)
    w.add_tensor("blk.0.ffn_up.weight", weights(hidden, dim), g.GGML_F32)
    w.add_tensor("blk.0.ffn_down.weight", weights(dim, hidden), g.GGML_F32)
    w.add_tensor("output_norm.weight", np.ones(dim, np.float32), g.GGML_F32)
    w.add_tensor("output.weight", weights(n_vocab, dim), g.GGML_F32)
    w.write(str(path))
    return path


@pytest.fixture(scope="module")
def models(sp, tmp_path_factory):
    """Models of the Llama 2 vocabulary alone, and with ChatML's markers."""
    folder = tmp_path_factory.mktemp("published-templates")
    return {"plain": write_model(folder / "plain.gguf", sp, []),
            "markers": write_model(folder / "chatml.gguf", sp, ["<|im_start|>", "<|im_end|>"])}


@pytest.fixture(scope="module")
def engines(models):
    with parley.Engine(models["plain"], threads=1) as p, \
            parley.Engine(models["markers"], threads=1) as m:
        yield {"plain": p, "markers": m}


def published_ids(sp, template, system, exchanges, last_user, specials):
    """The published template's rendering, tokenized run by run between special tokens."""
    messages = [{"role": "system", "content": system}] if system is not None else []
    for user, reply in exchanges:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    if last_user is not None:
        messages.append({"role": "user", "content": last_user})
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    text = env.from_string(template).render(messages=messages, bos_token="<s>", eos_token="</s>",
                                            add_generation_prompt=last_user is not None)
    split = "(" + "|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)) + ")"
    ids = []
    for part in re.split(split, text):
        if part in specials:
            ids.append(specials[part])
        elif part:
            ids += sp.encode(part)
    return ids if ids[:1] == [1] else [1] + ids  # llama.cpp starts every text with BOS


def imported_ids(engine, template, system, exchanges, last_user):
    messages = [{"role": "system", "text": system}] if system is not None else []
    for user, reply in exchanges:
        messages += [{"role": "user", "text": user},
                     {"role": "assistant", "text": reply, "closed": True}]
    messages.append({"role": "user", "text": last_user})
    document = {"format": "parley-conversation", "version": 1, "chat_template": template,
                "messages": messages}
    if system is not None:
        document["system_prompt"] = system
    with engine.import_session(json.dumps(document)) as s:
        return list(s.tokens)


def written_ids(engine, template, system, exchanges, last_user):
    """add_exchange leaves a reply open: the next message closes it as the template does."""
    with engine.session(system=system, template=template) as s:
        for user, reply in exchanges:
            s.add_exchange(user, reply)
        s.send(last_user, max_tokens=1, temperature=0, ignore_eos=True)
        return list(s.tokens)[:-1]  # but the generated token


# Parley's template: the published one, and the vocabulary it is tried with.
TEMPLATES = {"llama2": (LLAMA2, "plain"), "chatml": (CHATML, "markers"),
             "zephyr": (ZEPHYR, "plain")}


@pytest.mark.parametrize("name", CONVERSATIONS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_a_conversation_has_the_ids_of_its_published_template(sp, engines, template, name):
    published, vocabulary = TEMPLATES[template]
    system, exchanges, last_user = CONVERSATIONS[name]
    specials = {"<s>": 1, "</s>": 2}
    if vocabulary == "markers":
        specials.update({"<|im_start|>": IM_START, "<|im_end|>": IM_END})
    expected = published_ids(sp, published, system, exchanges, last_user, specials)
    engine = engines[vocabulary]
    assert imported_ids(engine, template, system, exchanges, last_user) == expected
    assert written_ids(engine, template, system, exchanges, last_user) == expected


def test_a_llama2_reply_of_whitespace_is_stored_reopened_and_imported_again(models, tmp_path):
    """Its template strips it to nothing: a reply with text and no ids, which a store and an
    import take back."""
    store = str(tmp_path / "store.db")
    with parley.Engine(models["plain"], store=store, threads=1) as e:
        with e.session(id="ws", template="llama2") as s:
            s.add_exchange("Hi", " \n ")
            s.send("Next", max_tokens=1, temperature=0, ignore_eos=True)
            before = list(s.tokens)
            exported = s.export()
        with e.open_session("ws") as s:
            assert list(s.tokens) == before
        with e.import_session(exported, id="copy") as s:
            assert list(s.tokens) == before


def test_a_llama2_reply_of_whitespace_goes_on_as_a_new_reply(sp, engines):
    """Text after whitespace the template stripped starts the reply: "Sure" is a word, and a
    generated first word is streamed without the space its piece has, as a new reply's."""
    sure = sp.piece_to_id("\u2581Sure")
    with engines["plain"].session(template="llama2") as s:
        s.add_exchange("Hi", "  ")
        before = len(s.tokens)
        s.continue_reply(reply_prefix="Sure", max_tokens=1, temperature=0, ignore_eos=True)
        assert list(s.tokens)[before:before + len(sp.encode("Sure"))] == sp.encode("Sure")
    with engines["plain"].session(template="llama2") as s:
        s.add_exchange("Hi", "  ")
        assert s.continue_reply(max_tokens=1, temperature=0, logit_bias={sure: 100.0}) == "Sure"
    with engines["plain"].session(template="llama2") as s:
        assert s.send("Hi", reply_prefix=" ", max_tokens=1, temperature=0,
                      logit_bias={sure: 100.0}) == " Sure"


def test_a_scored_llama2_continuation_ends_as_the_template_ends_the_whole_reply(sp, engines):
    """"Hello" + " world\n" ends as "[/INST] Hello world </s>": the text's last newline goes."""
    with engines["plain"].session(template="llama2") as s:
        s.add_exchange("Hi", "Hello")
        opened = list(s.tokens)
        whole = published_ids(sp, LLAMA2, None, [("Hi", "Hello world\n")], None,
                              {"<s>": 1, "</s>": 2})
        assert whole[:len(opened)] == opened
        [scored] = s.score_replies(None, [" world\n"], with_end=True)
        assert scored.n_tokens == len(whole) - len(opened)


def test_only_a_llama2_reply_may_have_text_and_no_ids(engines):
    """Imported ids are checked against the text: whitespace with no ids is a stripped llama2
    reply, never a message of another kind."""
    with engines["markers"].session(template="chatml") as s:
        s.add_exchange("Hi", "Hello")
        s.send("More", max_tokens=2, temperature=0, ignore_eos=True)
        exported = json.loads(s.export())
    for message in (2, 3):  # the second user message, then its reply
        changed = json.loads(json.dumps(exported))
        changed["messages"][message]["text"] = "   "
        changed["messages"][message]["tokens"] = []
        with pytest.raises(parley.InvalidArgumentError, match="has no token ids"):
            engines["markers"].import_session(json.dumps(changed), id="changed").close()


def test_a_rewound_llama2_reply_is_closed_as_an_empty_one(sp, engines):
    """rewind(1) leaves the message with an empty reply, which the next message closes as
    the template renders an empty reply: "[/INST]  </s>"."""
    with engines["plain"].session(template="llama2") as s:
        s.send("Hi", max_tokens=3, temperature=0, ignore_eos=True)
        s.rewind(1)
        s.send("Next", max_tokens=1, temperature=0, ignore_eos=True)
        expected = published_ids(sp, LLAMA2, None, [("Hi", "")], "Next", {"<s>": 1, "</s>": 2})
        assert list(s.tokens)[:-1] == expected
