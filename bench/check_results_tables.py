#!/usr/bin/env python3
"""Checks that results_tables.py turns bad input into one-line errors naming the file (and
line) with exit 1, notes an empty file instead of printing an empty section, and ends quietly
when its reader goes away.

Usage: check_results_tables.py
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results_tables.py")
KV_LINE = ('{"scenario": "kv-bytes", "model": "m", "weights": "f16", "backend": "cpu", '
           '"threads": 1, "kv": "int8", "kv_bytes_per_token": 1, "block_bytes": 16, '
           '"context_kv_bytes": 64, "context_tokens": 64}\n')
failures = []


def run(args, **kwargs):
    return subprocess.run([sys.executable, SCRIPT] + args, stderr=subprocess.PIPE, text=True,
                          timeout=60, **kwargs)


def expect(what, result, rc, stderr, stdout=""):
    out = result.stdout if result.stdout is not None else ""
    if result.returncode != rc or result.stderr != stderr or out != stdout:
        failures.append(f"{what}: exit {result.returncode}, stderr {result.stderr!r}, "
                        f"stdout {out!r}; expected exit {rc}, stderr {stderr!r}")


def check_files(tmp):
    def file_with(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as fh:
            fh.write(text)
        return path

    bad = file_with("bad.jsonl", KV_LINE + "\nnope\n")
    expect("a non-JSON line", run([bad], stdout=subprocess.PIPE), 1,
           f"results_tables.py: {bad}:3: not a JSON line (Expecting value)\n")
    not_bench = file_with("list.jsonl", "[1, 2]\n")
    expect("a JSON line that is not a parley-bench one", run([not_bench], stdout=subprocess.PIPE),
           1, f"results_tables.py: {not_bench}:1: not a parley-bench line (no 'scenario' key)\n")
    missing = os.path.join(tmp, "missing.jsonl")
    for args in ([missing], ["--combined", missing]):
        expect(f"{' '.join(args)}", run(args, stdout=subprocess.PIPE), 1,
               f"results_tables.py: cannot read {missing}: No such file or directory\n")
    empty = file_with("empty.jsonl", "")
    for args in ([empty], ["--combined", empty]):
        expect(f"{' '.join(args)}", run(args, stdout=subprocess.PIPE), 0,
               f"results_tables.py: {empty}: no measurements\n")
    many = file_with("many.jsonl", KV_LINE * 5000)
    check_closed_pipe(many)


def check_closed_pipe(path):
    # The read end is closed before the run starts: its first write fails (EPIPE).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = run([path], stdout=write_end)
    finally:
        os.close(write_end)
    if result.stderr != "":
        failures.append(f"closed pipe: exit {result.returncode}, stderr {result.stderr!r}")


with tempfile.TemporaryDirectory() as tmp:
    check_files(tmp)
for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)
