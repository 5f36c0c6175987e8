#!/usr/bin/env python3
"""Internal-consistency check of transcribed nccl-tests tables (catches copy errors).

For every data row of an nccl-tests table: algbw must equal size / time (nccl-tests prints
algbw = bytes / time_us / 1e3 GB/s) and busbw must equal size / time x the nccl-tests bus factor
of the collective (src/*.cu of NVIDIA/nccl-tests: all_reduce 2(n-1)/n; reduce_scatter,
all_gather, alltoall (n-1)/n; broadcast, reduce, sendrecv 1).  The printed values are
rounded (time to 4-5 significant digits, bandwidths to 0.01), so the check allows that
rounding.  Usage: check_tables.py FILE RANKS COLLECTIVE [FILE RANKS COLLECTIVE ...]
       check_tables.py --index collectives/index.json   (every nccl-tests file listed there)
Exit status 1 and the offending lines when a row is inconsistent.
"""
import re
import sys

FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}

INDEX_NAMES = {"allreduce": "all_reduce", "alltoall": "alltoall", "allgather": "all_gather",
               "reducescatter": "reduce_scatter", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv"}

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+(-?\d+\s+)?([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s*$")


def close(printed, exact, rel):
    return abs(printed - exact) <= 0.0051 + rel * exact


def check(path, n, coll):
    bad = 0
    rows = 0
    factor = FACTORS[coll](n)
    for ln, line in enumerate(open(path, encoding="utf-8"), 1):
        line = re.sub(r"^\[\d+(,\d+)*\]<stdout>:", "", line)
        line = re.sub(r"^\s*\d+: ", "", line)  # srun --label
        m = ROW.match(line)
        if not m:
            continue
        rows += 1
        size = int(m.group(1))
        for t, a, b in ((m.group(4), m.group(5), m.group(6)), (m.group(7), m.group(8), m.group(9))):
            t, a, b = float(t), float(a), float(b)
            # time is printed with 4 significant digits below 10^4 us (e.g. 1652.2), integer above
            rel_t = 0.5 / t if t >= 10000 else 0.06 / t + 1e-4
            alg = size / t / 1e3
            ok = close(a, alg, rel_t + 1e-4) and close(b, alg * factor, rel_t + 1e-4)
            if not ok:
                bad += 1
                print(f"{path}:{ln}: size {size} time {t} algbw {a} (size/time {alg:.3f}) busbw {b} (size/time x {factor:.4f} = {alg*factor:.3f})")
    print(f"{path}: {rows} rows, {bad} inconsistent")
    return bad == 0 and rows > 0


def main(argv):
    ok = True
    if len(argv) == 3 and argv[1] == "--index":
        import json
        import os
        base = os.path.dirname(argv[2])
        for e in json.load(open(argv[2], encoding="utf-8"))["files"]:
            if e["format"] == "nccl-tests":
                ok &= check(os.path.join(base, e["file"]), int(e["ranks"]), INDEX_NAMES[e["collective"]])
        return 0 if ok else 1
    for i in range(1, len(argv), 3):
        ok &= check(argv[i], int(argv[i + 1]), argv[i + 2])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
