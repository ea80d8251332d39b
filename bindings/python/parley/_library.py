"""Finds, loads and version-checks libparley, once, on first use."""

import ctypes
import os
import pathlib
import threading

from . import _native

LIBRARY_NAME = "libparley.so.0"  # the SONAME: any 0.x library is ABI-compatible

_lock = threading.Lock()
_lib = None


class LibraryError(OSError):
    """libparley could not be found or loaded, is not a Parley library, or is older than this
    package."""


def _is_sanitized_build(build_dir):
    # An AddressSanitizer library aborts the process when loaded into a Python that was not
    # started with the sanitizer runtime preloaded, so the search skips such build trees.
    cache = build_dir / "CMakeCache.txt"
    try:
        return "PARLEY_SANITIZE:BOOL=ON" in cache.read_text(errors="replace")
    except OSError:
        return False


def _build_tree_candidates(package_dir):
    """libparley.so.0 of the repository's build trees: build/ first, then the newest."""
    root = package_dir.parent.parent.parent  # <root>/bindings/python/parley
    if not (root / "include" / "parley.h").is_file():
        return []
    found = [p for p in root.glob("build*/lib/" + LIBRARY_NAME)
             if p.is_file() and not _is_sanitized_build(p.parent.parent)]
    found.sort(key=lambda p: (p.parent.parent.name != "build", -p.stat().st_mtime))
    return found


def candidates():
    """Where the library is looked for, in order (the last entry goes to the system loader)."""
    env = os.environ.get("PARLEY_LIBRARY")
    if env:
        return [pathlib.Path(env)]  # an explicit choice is never second-guessed
    package_dir = pathlib.Path(__file__).resolve().parent
    paths = []
    bundled = package_dir / LIBRARY_NAME
    if bundled.is_file():
        paths.append(bundled)
    paths.extend(_build_tree_candidates(package_dir))
    paths.append(LIBRARY_NAME)
    return paths


def _version_text(number):
    return "%d.%d.%d" % (number // 10000, number // 100 % 100, number % 100)


def check_version(found_number, found_text, where):
    """Any later 0.x library serves this package (the ABI only grows within a major
    version); an older one may lack what it calls, another major may differ in layout."""
    want = _version_text(_native.VERSION_NUMBER)
    if found_number < _native.VERSION_NUMBER:
        raise LibraryError("%s is Parley %s, older than the %s this package needs; "
                           "point PARLEY_LIBRARY at a newer libparley.so.0"
                           % (where, found_text, want))
    if found_number // 10000 != _native.VERSION_NUMBER // 10000:
        raise LibraryError("%s is Parley %s, another major version than the %s this package "
                           "was written for" % (where, found_text, want))


def _load(where):
    lib = _declare(ctypes.CDLL(str(where)), where)
    check_version(lib.parley_version_number(), lib.parley_version().decode(), where)
    return lib


def _declare(lib, where):
    """_native.declare(lib), loaded from `where`; a library without parley_version is not
    Parley's at all, one without a later function an older Parley."""
    if not hasattr(lib, "parley_version"):
        raise LibraryError("%s is not a Parley library: it lacks parley_version; point "
                           "PARLEY_LIBRARY at libparley.so.0" % where)
    try:
        return _native.declare(lib)
    except AttributeError as e:
        raise LibraryError("%s lacks a function this package needs (%s); it is older "
                           "than Parley %s" % (where, e, _version_text(_native.VERSION_NUMBER))
                           ) from e


def _not_loaded(tried, error):
    """The LibraryError when no candidate loaded; error: the last one's OSError."""
    env = os.environ.get("PARLEY_LIBRARY")
    if not env:
        return LibraryError("libparley not found; set PARLEY_LIBRARY to its path. Tried: "
                            + "; ".join(tried))
    # The loader's words for a missing file ("cannot open shared object file") read like a
    # broken one, and for a directory like a bad file. A bare name is left to its search.
    if os.sep in env and not os.path.exists(env):
        return LibraryError("libparley not found: PARLEY_LIBRARY is %s, a file that does not "
                            "exist" % env)
    if os.path.isdir(env):
        inside = os.path.join(env, LIBRARY_NAME)
        return LibraryError("libparley not loaded: PARLEY_LIBRARY is %s, a directory, not a "
                            "library file; set it to %s" % (env, inside if os.path.isfile(inside)
                                                           else "the library file's path"))
    return LibraryError("libparley not loaded: PARLEY_LIBRARY is %s, which the loader could "
                        "not load: %s" % (env, error))


def lib():
    """The loaded, declared and version-checked library."""
    global _lib
    with _lock:
        if _lib is None:
            tried, error = [], None
            for where in candidates():
                try:
                    _lib = _load(where)
                    break
                except OSError as e:
                    if isinstance(e, LibraryError):
                        raise
                    tried.append("%s (%s)" % (where, e))
                    error = e
            else:
                raise _not_loaded(tried, error)
        return _lib
