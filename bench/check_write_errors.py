#!/usr/bin/env python3
"""Checks that parley-bench fails, naming what it could not do, when its results cannot be
written (stdout or --out on a full disk, stdout a pipe nobody reads), and when the memory
bandwidth copy loop cannot have its arrays.

Usage: check_write_errors.py path/to/parley-bench [sanitized]
("sanitized": built with a sanitizer, which cannot run under an address space limit)
"""
import os
import resource
import subprocess
import sys

BENCH = sys.argv[1]
SANITIZED = len(sys.argv) > 2 and sys.argv[2] not in ("", "0", "OFF", "FALSE")
# kv-bytes writes one line, soon after a small synthetic model is built.
RUN = [BENCH, "--synthetic", "stories15m", "--threads", "1", "--copy-mib", "1",
       "--scenario", "kv-bytes"]
failures = []


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def expect_failure(what, result, message):
    err = last_line(result.stderr)
    if result.returncode != 1 or err != message:
        failures.append(f"{what}: exit {result.returncode}, last stderr line '{err}', "
                        f"expected exit 1 and '{message}'")


def run(args, **kwargs):
    return subprocess.run(args, stderr=subprocess.PIPE, text=True, timeout=120, **kwargs)


def check_full_disk():
    if not os.path.exists("/dev/full"):
        print("no /dev/full: full-disk checks skipped")
        return
    with open("/dev/full", "w") as full:
        expect_failure("stdout on /dev/full", run(RUN, stdout=full),
                       "parley-bench: cannot write the results to stdout: "
                       "No space left on device")
    expect_failure("--out /dev/full", run(RUN + ["--out", "/dev/full"],
                                          stdout=subprocess.DEVNULL),
                   "parley-bench: cannot write the results to --out file '/dev/full': "
                   "No space left on device")


def check_closed_pipe():
    # The read end is closed before the run starts: every write it makes fails (EPIPE).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = run(RUN, stdout=write_end)
    finally:
        os.close(write_end)
    expect_failure("stdout a closed pipe", result,
                   "parley-bench: cannot write the results to stdout: Broken pipe")


def mem_available_mib():
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return None


def check_copy_loop_memory():
    # The largest --copy-mib: two such arrays exceed the memory of any machine this runs on,
    # and each one alone is more than the kernel lends, so nothing is touched even if the
    # check were missing.
    largest = 65536
    available = mem_available_mib()
    if available is None or 2 * largest <= 0.9 * available:
        print("MemAvailable unknown or large: --copy-mib memory check skipped")
    else:
        result = run(RUN + ["--copy-mib", str(largest)], stdout=subprocess.PIPE)
        err = last_line(result.stderr)
        if result.returncode != 1 or not err.startswith(
                f"parley-bench: --copy-mib {largest} needs two arrays of that size"):
            failures.append(f"--copy-mib {largest}: exit {result.returncode}, '{err}'")
    if SANITIZED:
        print("sanitized build: address space limit check skipped")
        return
    # The arrays (2 x 768 MiB) fit in memory but not in the child's address space.
    limit = 1 << 30

    def limit_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    result = run(RUN + ["--copy-mib", "768"], stdout=subprocess.PIPE,
                 preexec_fn=limit_address_space)
    err = last_line(result.stderr)
    expected = ("parley-bench: the memory bandwidth child process (two arrays of 768 MiB, "
                "1 thread) failed: not enough memory for the arrays (--copy-mib 768)")
    if "MemAvailable" in err:
        print("too little memory for the address space limit check: skipped")
    elif result.returncode != 1 or err != expected or result.stderr.count("\n") != 1:
        failures.append(f"--copy-mib 768 under a 1 GiB address space: exit "
                        f"{result.returncode}, stderr '{result.stderr}'")


check_full_disk()
check_closed_pipe()
check_copy_loop_memory()
for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)
