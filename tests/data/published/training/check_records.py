#!/usr/bin/env python3
"""Checks every training record of this folder for the fields the validation tooling needs.

Required per record: id (unique), model.{layers, hidden, heads, kv_heads, ffn_hidden, seq_len, vocab},
gpus, gpu_type, parallelism.{dp, tp, pp, cp} with dp*tp*pp*cp == gpus, recompute, precision,
sequence_parallel, measured (at least one number), and a .SOURCE.txt next to each .json.
Also re-derives what can be re-derived: global batch divisible by dp, MFU in (0, 1).
Usage: check_records.py [FILE.json ...] (default: every *.json here). Exit 1 on any problem.
"""
import glob
import json
import os
import sys


def check(path):
    problems = []
    if not os.path.exists(path[:-5] + ".SOURCE.txt"):
        problems.append("no SOURCE file")
    ids = set()
    for r in json.load(open(path, encoding="utf-8")):
        rid = r.get("id", "?")
        if rid in ids:
            problems.append(f"{rid}: duplicate id")
        ids.add(rid)
        m = r.get("model", {})
        for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"):
            if not isinstance(m.get(k), int) or m[k] <= 0:
                problems.append(f"{rid}: model.{k} = {m.get(k)!r}")
        p = r.get("parallelism", {})
        prod = 1
        for k in ("dp", "tp", "pp", "cp"):
            if not isinstance(p.get(k), int) or p[k] <= 0:
                problems.append(f"{rid}: parallelism.{k} = {p.get(k)!r}")
            else:
                prod *= p[k]
        if prod != r.get("gpus"):
            problems.append(f"{rid}: dp*tp*pp*cp = {prod} but gpus = {r.get('gpus')}")
        for k in ("gpu_type", "recompute", "precision", "sequence_parallel"):
            if k not in r:
                problems.append(f"{rid}: no {k}")
        meas = r.get("measured", {})
        if not any(isinstance(v, (int, float)) and v > 0 for v in meas.values()):
            problems.append(f"{rid}: no measured number")
        gb = r.get("global_batch_sequences")
        if isinstance(gb, int) and isinstance(p.get("dp"), int) and gb % p["dp"] != 0:
            problems.append(f"{rid}: global batch {gb} not divisible by dp {p['dp']}")
        if "mfu" in r and not (0 < r["mfu"] < 1):
            problems.append(f"{rid}: mfu {r['mfu']}")
    print(f"{path}: {len(ids)} records, {len(problems)} problems")
    for x in problems:
        print("  " + x)
    return not problems


def main(argv):
    files = argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.json")))
    ok = all([check(f) for f in files])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
