#!/usr/bin/env python3
"""Turns parley-bench JSON lines into the Markdown tables of RESULTS.md.

Usage: bench/results_tables.py FILE.jsonl [FILE.jsonl ...]
"""
import json
import sys


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "| " + " | ".join("---:" for _ in headers) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def f(x, digits=1):
    return f"{x:,.{digits}f}"


def kv_bytes(lines):
    return table(["kv", "bytes/token", "block bytes (16 tokens)", "full context KV"],
                 [[l["kv"], f"{l['kv_bytes_per_token']:,}", f"{l['block_bytes']:,}",
                   f"{l['context_kv_bytes'] / 1e6:,.2f} MB ({l['context_tokens']} tokens)"]
                  for l in lines])


def shared_prefix(lines):
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


def turns(lines):
    return table(["turn", "prompt", "reused", "computed", "generated", "context", "TTFT ms",
                  "TPOT ms"],
                 [[l["turn"], l["prompt_tokens"], l["reused_tokens"], l["computed_tokens"],
                   l["generated_tokens"], l["context_tokens"], f(l["ttft_ms"]),
                   f(l["tpot_ms"], 2)] for l in lines if "turn" in l])


def prefill(lines):
    return table(["kv", "prompt tokens", "runs", "prefill tok/s (median)", "TTFT ms median",
                  "TTFT ms p90", "peak RSS MB"],
                 [[l["kv"], l["prompt_tokens"], l["runs"], f(l["prefill_tok_s_median"]),
                   f(l["ttft_ms_median"], 2), f(l["ttft_ms_p90"], 2), f(l["peak_rss_mb"])]
                  for l in lines])


def decode(lines):
    return table(["kv", "P + G", "runs", "TTFT ms", "prefill tok/s", "TPOT ms median",
                  "TPOT ms p90", "decode tok/s", "bytes read/token (weights + KV)",
                  "decode GB/s", "copy GB/s", "utilisation", "peak RSS MB"],
                 [[l["kv"], f"{l['prompt_tokens']} + {l['gen_tokens']}", l["runs"],
                   f(l["ttft_ms_median"]), f(l["prefill_tok_s_median"]),
                   f(l["tpot_ms_median"], 2), f(l["tpot_ms_p90"], 2), f(l["decode_tok_s"]),
                   f"{l['weight_bytes_per_token'] / 1e6:,.2f} MB + "
                   f"{l['kv_bytes_read_per_token'] / 1e6:,.2f} MB",
                   f(l["decode_gb_s"], 2), f(l["copy_gb_s"], 1),
                   f"{100 * l['bandwidth_utilisation']:.0f}%", f(l["peak_rss_mb"])]
                  for l in lines])


RENDER = {"kv-bytes": kv_bytes, "shared-prefix": shared_prefix, "turns": turns,
          "prefill": prefill, "decode": decode}


def main(paths):
    for path in paths:
        with open(path) as fh:
            lines = [json.loads(x) for x in fh if x.strip()]
        models = sorted({l["model"] for l in lines})
        print(f"## {', '.join(models)}\n")
        for scenario, render in RENDER.items():
            these = [l for l in lines if l["scenario"] == scenario and "skipped" not in l]
            if these:
                l0 = these[0]
                print(f"### {scenario} (weights {l0['weights']}, {l0['backend']}, "
                      f"{l0['threads']} threads)\n")
                print(render(these) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
