"""The binding matches parley.h: struct layouts, every function declared, version refusal."""

import ctypes
import ctypes.util
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import types

import pytest

from conftest import BINDINGS_DIR, REPO_ROOT

import parley
from parley import _library, _native

# Sizes and offsets documented by parley.h for 64-bit targets (tests/abi asserts the same).
LAYOUT = {
    _native.EngineOptions: (72, {"model_path": 8, "n_threads": 32, "kv_budget_bytes": 40,
                                 "context_length": 52, "on_load_progress": 56,
                                 "load_progress_user": 64}),
    _native.SessionOptions: (48, {"id": 8, "overflow": 40, "reserved0": 44}),
    _native.GenerateOptions: (96, {"seed": 8, "max_tokens": 16, "temperature": 20,
                                   "ignore_eos": 44, "stop": 48, "n_stop": 56,
                                   "reserved0": 60, "reply_prefix": 64, "logit_bias": 72,
                                   "n_logit_bias": 80, "format": 84, "json_schema": 88}),
    _native.LogitBias: (8, {"token": 0, "bias": 4}),
    _native.TurnStats: (64, {"generated_tokens": 20, "ttft_ms": 24, "kv_source": 48,
                             "reserved0": 52, "stop_reason": 56, "stop_index": 60}),
    _native.SessionInfo: (200, {"id": 8, "n_turns": 136, "state": 144, "overflow": 148,
                                "kv_bytes_resident": 152, "kv_bytes_stored": 160,
                                "chat_template": 168}),
    _native.StoredSessionInfo: (48, {"created_unix_ms": 8, "updated_unix_ms": 16,
                                      "n_turns": 24, "is_open": 28, "kv_bytes_stored": 32,
                                      "same_model": 40, "reserved0": 44}),
    _native.Turn: (24, {"text": 8, "role": 16, "n_tokens": 20}),
    _native.EngineStats: (120, {"reserved0": 20, "kv_blocks_total": 24, "store_bytes": 96,
                               "decode_steps": 104, "decode_tokens": 112}),
    _native.ModelInfo: (272, {"name": 8, "architecture": 136, "chat_template": 168,
                              "n_vocab": 200, "n_params": 232, "backend": 240}),
}


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="layouts are for 64-bit")
@pytest.mark.parametrize("struct", list(LAYOUT), ids=lambda s: s.__name__)
def test_struct_layout_matches_header(struct):
    size, offsets = LAYOUT[struct]
    assert ctypes.sizeof(struct) == size
    for field, offset in offsets.items():
        assert getattr(struct, field).offset == offset, field


def test_every_header_function_is_declared():
    header = (REPO_ROOT / "include" / "parley.h").read_text()
    declared = set(re.findall(r"PARLEY_API\s[^;(]*?\b(parley_[a-z0-9_]+)\(", header))
    assert len(declared) >= 20
    assert declared == set(_native.SIGNATURES)


def test_header_version_is_what_the_binding_knows():
    header = (REPO_ROOT / "include" / "parley.h").read_text()
    parts = [int(re.search(r"#define PARLEY_VERSION_%s (\d+)" % p, header).group(1))
             for p in ("MAJOR", "MINOR", "PATCH")]
    assert _native.VERSION_NUMBER == parts[0] * 10000 + parts[1] * 100 + parts[2]


def test_package_version_is_the_binding_version():
    want = _library._version_text(_native.VERSION_NUMBER)
    assert parley.__version__ == want
    pyproject = (BINDINGS_DIR / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == want


def test_loaded_library_reports_its_version():
    assert parley.version_number() >= _native.VERSION_NUMBER
    assert parley.version().count(".") == 2


def test_an_older_library_is_refused():
    def text(number):
        return _library._version_text(number)

    current = _native.VERSION_NUMBER
    with pytest.raises(parley.LibraryError, match="older than the %s" % text(current)):
        _library.check_version(current - 100, text(current - 100), "/old/libparley.so.0")
    _library.check_version(current, text(current), "/current/libparley.so.0")
    _library.check_version(current + 100, text(current + 100), "/newer/libparley.so.0")


def test_another_major_version_is_refused():
    with pytest.raises(parley.LibraryError, match="another major version"):
        _library.check_version(10000, "1.0.0", "/next/libparley.so.1")


def library_error_with(parley_library):
    """What loading the library says with PARLEY_LIBRARY set so, in a fresh interpreter
    (this one has already loaded it): "LibraryError: <message>"."""
    env = dict(os.environ, PARLEY_LIBRARY=str(parley_library))
    code = "import parley\ntry:\n    parley.version()\nexcept parley.LibraryError as e:\n" \
           "    print('LibraryError:', e)\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=BINDINGS_DIR, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("LibraryError: "), out.stderr
    return out.stdout.strip()


def test_a_missing_library_file_is_named_as_missing(tmp_path):
    missing = tmp_path / "libparley.so.0"
    assert library_error_with(missing) == ("LibraryError: libparley not found: PARLEY_LIBRARY "
                                           "is %s, a file that does not exist" % missing)


def test_a_directory_is_named_as_one(tmp_path):
    assert library_error_with(tmp_path) == (
        "LibraryError: libparley not loaded: PARLEY_LIBRARY is %s, a directory, not a library "
        "file; set it to the library file's path" % tmp_path)
    shutil.copy(parley.library_path(), tmp_path / "libparley.so.0")
    assert library_error_with(tmp_path).endswith("set it to %s" % (tmp_path / "libparley.so.0"))


def test_a_file_the_loader_refuses_is_named_with_its_reason(tmp_path):
    not_a_library = tmp_path / "libparley.so.0"
    not_a_library.write_text("not a shared object\n")
    message = library_error_with(not_a_library)
    assert message.startswith("LibraryError: libparley not loaded: PARLEY_LIBRARY is %s, "
                              "which the loader could not load: " % not_a_library), message
    assert "not found" not in message


def test_a_library_that_is_not_parley_is_named_so():
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no C library to load by name")
    message = library_error_with(libc)
    assert message == ("LibraryError: %s is not a Parley library: it lacks parley_version; "
                       "point PARLEY_LIBRARY at libparley.so.0" % libc), message


class PartialLibrary:
    """A library with only the functions named."""

    def __init__(self, names):
        self._names = names

    def __getattr__(self, name):
        if name not in self._names:
            raise AttributeError("undefined symbol: %s" % name)
        function = types.SimpleNamespace()
        setattr(self, name, function)
        return function


def test_a_parley_library_lacking_a_later_function_is_older():
    older = PartialLibrary(set(_native.SIGNATURES) - {"parley_session_get_end_ids"})
    with pytest.raises(parley.LibraryError, match="parley_session_get_end_ids.*it is older "
                       "than Parley %s" % _library._version_text(_native.VERSION_NUMBER)):
        _library._declare(older, "/old/libparley.so.0")
    with pytest.raises(parley.LibraryError, match="is not a Parley library"):
        _library._declare(PartialLibrary(set()), "/lib/libother.so")
    complete = PartialLibrary(set(_native.SIGNATURES))
    assert _library._declare(complete, "/current/libparley.so.0") is complete


def test_a_library_beside_the_package_is_found_first(tmp_path):
    # A copy of the package with libparley.so.0 inside, as a wheel that bundles it would be.
    package = tmp_path / "parley"
    shutil.copytree(BINDINGS_DIR / "parley", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(parley.library_path(), package / "libparley.so.0")
    env = {k: v for k, v in os.environ.items() if k != "PARLEY_LIBRARY"}
    out = subprocess.run([sys.executable, "-c", "import parley; print(parley.library_path())"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == str(package / "libparley.so.0"), out.stderr


@pytest.mark.parametrize("result", [parley.EngineStats, parley.ModelInfo, parley.SessionInfo,
                                    parley.StoredSessionInfo, parley.TurnStats,
                                    parley.TokenCount, parley.ReplyScore],
                         ids=lambda c: c.__name__)
def test_result_types_document_every_field(result):
    # Without a docstring of its own a dataclass gets its signature as __doc__.
    doc = result.__doc__ or ""
    assert not doc.startswith(result.__name__ + "("), "no docstring"
    missing = [f.name for f in dataclasses.fields(result) if f.name not in doc]
    assert not missing, "fields the docstring does not explain: %s" % missing


def test_generation_docstrings_say_what_matters():
    assert "0 = up to the context's end" in parley.Session.send.__doc__
    assert "True" in parley.Session.send.__doc__
    assert "tpot_ms" in parley.TurnStats.__doc__ and "on_text" in parley.TurnStats.__doc__
    for method in (parley.Session.stream, parley.Session.stream_continue):
        assert "contextlib.closing" in method.__doc__


def test_a_broken_cuda_module_is_named_once_with_its_reason(tmp_path, model_path):
    # The module is looked for beside libparley, then on the loader's search path: here both
    # lead to the same broken file, whose reason the error gives once.
    shutil.copy(parley.library_path(), tmp_path / "libparley.so.0")
    broken = tmp_path / "libparley_cuda.so"
    broken.write_bytes(b"not a shared object\n")
    env = {k: v for k, v in os.environ.items() if k != "PARLEY_CUDA_MODULE"}
    env.update(PARLEY_LIBRARY=str(tmp_path / "libparley.so.0"), LD_LIBRARY_PATH=str(tmp_path))
    code = ("import parley\n"
            "try:\n"
            "    parley.Engine(%r, device='cuda')\n"
            "except parley.BackendError as e:\n"
            "    print(e.message)\n" % str(model_path))
    out = subprocess.run([sys.executable, "-c", code], cwd=BINDINGS_DIR, env=env,
                         capture_output=True, text=True, timeout=60)
    message = out.stdout.strip()
    assert "cannot load libparley_cuda.so" in message, (message, out.stderr)
    assert message.count(str(broken)) == 1, message
