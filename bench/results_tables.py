#!/usr/bin/env python3
"""Turns parley-bench JSON lines into the Markdown tables of RESULTS.md.

Usage: bench/results_tables.py [--combined] FILE.jsonl [FILE.jsonl ...]

By default each file gets its own section with a table per scenario. With --combined, the
prefill and decode lines of all the files go into one table each, with model and weights
columns, to compare models and weight types side by side.

Reads the current output (scenarios prefill, decode, turn, prefix, spill, kv-bytes, codec,
json-format);
lines written under the older names turns and shared-prefix are read as turn and prefix.
"""
import functools
import json
import os
import sys

OLD_NAMES = {"turns": "turn", "shared-prefix": "prefix"}


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "| " + " | ".join("---:" for _ in headers) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def f(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


def mb(x):
    return "-" if x is None else f"{x / 1e6:,.1f}"


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def model_name(l):
    return l["model"].removeprefix("synthetic:")


def kv_bytes(lines):
    return table(["kv", "bytes/token", "block bytes (16 tokens)", "full context KV"],
                 [[l["kv"], f"{l['kv_bytes_per_token']:,}", f"{l['block_bytes']:,}",
                   f"{l['context_kv_bytes'] / 1e6:,.2f} MB ({l['context_tokens']} tokens)"]
                  for l in lines])


def prefix(lines):
    sessions = [l for l in lines if l.get("part") == "session"]
    summary = [l for l in lines if l.get("part") == "summary"]
    rows = [[l["session"], l["prompt_tokens"], l["reused_tokens"], l["computed_tokens"],
             f(l["ttft_ms"])] for l in sessions]
    text = table(["session", "prompt tokens", "reused", "computed", "TTFT ms"], rows)
    for s in summary:
        live, closed = s["blocks_live"], s["blocks_after_close"]
        text += ("\n\n" + table(
            ["kv", "system tokens", "TTFT first ms", "TTFT rest median ms", "ratio",
             "blocks used / shared (live)", "cached after close", "prefix hits / misses"],
            [[s["kv"], s["system_tokens"], f(s["ttft_first_ms"]), f(s["ttft_rest_median_ms"]),
              f(s["ttft_ratio"], 2), f"{live['used']} / {live['shared']}", closed["cached"],
              f"{closed['prefix_hits']} / {closed['prefix_misses']}"]]))
    return text


def turn(lines):
    return table(["turn", "prompt", "reused", "computed", "generated", "context", "TTFT ms",
                  "TPOT ms median", "TPOT ms p90"],
                 [[l["turn"], l["prompt_tokens"], l["reused_tokens"], l["computed_tokens"],
                   l["generated_tokens"], l["context_tokens"], f(l["ttft_ms"]),
                   f(l["tpot_ms_median"], 2), f(l["tpot_ms_p90"], 2)] for l in lines])


PREFILL_HEADERS = ["kv", "prompt tokens", "runs", "prefill tok/s (median)", "TTFT ms median",
                   "TTFT ms p90", "peak RSS MB"]


def prefill_row(l):
    return [l["kv"], l["prompt_tokens"], l["runs"], f(l["prefill_tok_s"]), f(l["ttft_ms"]),
            f(l["ttft_ms_p90"]), mb(l["peak_rss_bytes"])]


def prefill(lines):
    return table(PREFILL_HEADERS, [prefill_row(l) for l in lines])


DECODE_HEADERS = ["kv", "context + generated", "runs", "TPOT ms median", "TPOT ms p90",
                  "decode tok/s", "MB read/token (weights + KV)", "decode GB/s", "copy GB/s",
                  "utilisation", "read GB/s", "of read", "copy GB/s before / after",
                  "of their mean", "peak RSS MB"]


def decode_row(l):
    return [l["kv"], f"{l['context_tokens']} + {l['generated_tokens']}", l["runs"],
            f(l["tpot_ms_median"], 2), f(l["tpot_ms_p90"], 2), f(l["decode_tok_s"]),
            f"{l['weight_bytes_per_token'] / 1e6:,.1f} + {l['kv_bytes_read_per_token'] / 1e6:,.2f}",
            f(l["decode_gbs"], 2), f(l["bandwidth_gbs"], 1),
            pct(l["decode_bandwidth_utilisation"]), f(l.get("read_bandwidth_gbs"), 1),
            pct(l.get("decode_read_utilisation")), adjacent_copy(l),
            pct(l.get("decode_adjacent_utilisation")), mb(l["peak_rss_bytes"])]


def adjacent_copy(l):
    """The copy loop right before and after a decode line's timings (older files: none)."""
    before, after = l.get("bandwidth_before_gbs"), l.get("bandwidth_after_gbs")
    return "-" if before is None or after is None else f"{before:.1f} / {after:.1f}"


def decode(lines):
    return table(DECODE_HEADERS, [decode_row(l) for l in lines])


def spill(lines):
    return table(["kv", "tokens", "spill ms", "restore ms", "re-prefill ms",
                  "restore / re-prefill", "stored bytes/token", "vs F16 KV"],
                 [[l["kv"], l["context_tokens"], f(l["spill_ms"]), f(l["restore_ms"]),
                   f(l["reprefill_ms"], 0), f(l["restore_ms"] / l["reprefill_ms"], 4),
                   f(l["stored_bytes_per_token"]),
                   f(l["stored_bytes_per_token"] / l["f16_kv_bytes_per_token"], 2)]
                  for l in lines])


def codec(lines):
    return table(["kv", "zstd level", "filter", "disk bytes/token", "vs F16 KV", "vs raw KV",
                  "encode MB/s", "decode MB/s", "round trip"],
                 [[l["kv"], l["zstd_level"], "on" if l["filter"] else "off",
                   f(l["disk_bytes_per_token"]), f(l["ratio_vs_f16_kv"], 3),
                   f(l["ratio_vs_raw_kv"], 3), f(l["encode_mb_s"], 0), f(l["decode_mb_s"], 0),
                   "exact" if l["round_trip_ok"] else "DIFFERS"] for l in lines])


def json_format(lines):
    return table(["kv", "state", "reply so far", "mask ms", "allowed tokens", "vocabulary",
                  "sort ms"],
                 [[l["kv"], l["state"], "`" + l["reply_so_far"] + "`", f(l["mask_ms"], 3),
                   l["allowed_tokens"], l["vocabulary_tokens"], f(l["vocabulary_sort_ms"], 1)]
                  for l in lines])


RENDER = {"kv-bytes": kv_bytes, "prefix": prefix, "turn": turn, "prefill": prefill,
          "decode": decode, "spill": spill, "codec": codec, "json-format": json_format}


class BadInput(Exception):
    """A file that cannot be turned into tables; the message names the file (and line)."""


def parse_line(path, number, text):
    try:
        line = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{number}: not a JSON line ({e.msg})") from None
    if not isinstance(line, dict) or "scenario" not in line:
        raise BadInput(f"{path}:{number}: not a parley-bench line (no 'scenario' key)")
    line["scenario"] = OLD_NAMES.get(line["scenario"], line["scenario"])
    return line


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [parse_line(path, n, x) for n, x in enumerate(fh, 1) if x.strip()]
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise BadInput(f"cannot read {path}: {reason}") from None
    measured = [l for l in lines if "skipped" not in l]
    if not measured:
        print(f"results_tables.py: {path}: no measurements", file=sys.stderr)
    return measured


def rendered(path, scenario, render, lines):
    try:
        return render(lines)
    except (KeyError, TypeError) as e:
        raise BadInput(f"{path}: a {scenario} line lacks a field or has the wrong type: {e}") \
            from None


def per_file(paths):
    for path in paths:
        lines = read_lines(path)
        if not lines:
            continue
        models = sorted({str(l.get("model")) for l in lines})
        print(f"## {', '.join(models)}\n")
        for scenario, render in RENDER.items():
            these = [l for l in lines if l["scenario"] == scenario]
            if these:
                l0 = these[0]
                print(f"### {scenario} (weights {l0.get('weights')}, {l0.get('backend')}, "
                      f"{l0.get('threads')} threads)\n")
                print(rendered(path, scenario, render, these) + "\n")


def combined_table(headers, row, lines):
    return table(["model", "weights", "threads"] + headers,
                 [[model_name(l), l["weights"], l["threads"]] + row(l) for l in lines])


def combined(paths):
    lines = [l for path in paths for l in read_lines(path)]
    for scenario, headers, row in (("prefill", PREFILL_HEADERS, prefill_row),
                                   ("decode", DECODE_HEADERS, decode_row)):
        these = [l for l in lines if l["scenario"] == scenario]
        if these:
            render = functools.partial(combined_table, headers, row)
            print(rendered(", ".join(paths), scenario, render, these))
            print()


def main(argv):
    combine = bool(argv) and argv[0] == "--combined"
    paths = argv[1:] if combine else argv
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        if combine:
            combined(paths)
        else:
            per_file(paths)
        sys.stdout.flush()
    except BadInput as e:
        print(f"results_tables.py: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): what it wanted was printed. Python would report the
        # failed flush of the rest at exit; send that to /dev/null instead.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
