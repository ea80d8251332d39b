"""Shared fixtures: the package from this checkout, the reference model, and engines on it.

The reference model lives in ../shared beside the repository. Without it the tests that need
it are skipped with the reason shown; under CI=true they fail instead, so a CI machine
missing the models cannot pass quietly.
"""

import os
import pathlib
import signal
import sys

import pytest

BINDINGS_DIR = pathlib.Path(__file__).resolve().parents[1]
REPO_ROOT = BINDINGS_DIR.parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"

sys.path.insert(0, str(BINDINGS_DIR))  # test this checkout's package, not an installed one

import parley  # noqa: E402


def shared_file(relative):
    """A file under ../shared; skips the test (fails under CI=true) when it is missing."""
    path = SHARED_DIR / relative
    if not path.exists():
        reason = "%s not found (reference models and goldens live in ../shared)" % path
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture
def model_path():
    return shared_file("models/stories260k/stories260k-f32.gguf")


@pytest.fixture
def engine(model_path):
    """An in-memory engine with F32 KV, whose greedy replies match the reference exactly."""
    with parley.Engine(model_path, kv="f32", threads=2) as e:
        yield e


# Greedy decoding that does not stop early: the settings of the reference runs.
GREEDY = dict(temperature=0, max_tokens=32, ignore_eos=True)
HUGE = "and the dog ran " * 20000  # far more tokens than the model's context


@pytest.fixture
def default_ctrl_c_handling():
    """Python's own SIGINT handler, as an interactive program has it: a shell starts a job in
    the background with SIGINT ignored, and Python then leaves it so."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
