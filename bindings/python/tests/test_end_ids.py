"""Session.end_ids (since 0.9): the ids that end a session's replies, for banning with
logit_bias. They depend on the model and the session's template."""

import pytest

import parley

BOS, EOS = 1, 2  # stories260k's
# A prompt the greedy raw reply of stories260k ends by itself, after about 150 tokens.
ENDING_PROMPT = "The cat sat on the mat."
ROOM_TO_END = 200


def reply_stats(engine, banned):
    with engine.session(template="raw") as s:
        s.send(ENDING_PROMPT, temperature=0, max_tokens=ROOM_TO_END, ignore_eos=False,
               logit_bias={i: float("-inf") for i in banned})
        return s.last_stats


def test_raw_ends_on_bos_and_eos_in_ascending_order(engine):
    with engine.session(template="raw") as s:
        assert s.end_ids == (BOS, EOS)


def test_chatml_without_its_marker_in_the_vocabulary_ends_on_eos(engine):
    assert len(engine.tokenize("<|im_end|>")) > 1  # the marker is text to this model
    with engine.session(template="chatml") as s:
        assert s.end_ids == (EOS,)


def test_banning_every_end_id_makes_the_reply_run_to_max_tokens(engine):
    free = reply_stats(engine, ())
    assert free.stop_reason == "end_token"
    assert free.generated_tokens < ROOM_TO_END
    with engine.session(template="raw") as s:
        banned = reply_stats(engine, s.end_ids)
    assert banned.stop_reason == "max_tokens"
    assert banned.generated_tokens == ROOM_TO_END


def test_end_ids_is_read_only_and_needs_an_open_session(engine):
    s = engine.session(template="raw")
    with pytest.raises(AttributeError):
        s.end_ids = (EOS,)
    s.close()
    with pytest.raises(parley.MisuseError):
        s.end_ids
