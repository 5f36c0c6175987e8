#!/usr/bin/env python3
"""Writes jiang2024-megascale.json from jiang2024-megascale.rows.md (Table 2, Table 3 baseline).
Run: python3 build_megascale.py > jiang2024-megascale.json"""
import json
import sys

T2 = [  # batch, method, gpus, time, tokens/s (as printed), train days, MFU %, PFlops
    (768, "Megatron-LM", [256, 512, 768, 1024], [40.0, 21.2, 15.2, 11.9], ["39.3k", "74.1k", "103.8k", "132.7k"],
     [88.35, 46.86, 33.45, 26.17], [53.0, 49.9, 46.7, 44.7], [43.3, 77.6, 111.9, 131.9]),
    (768, "MegaScale", [256, 512, 768, 1024], [32.0, 16.5, 11.5, 8.9], ["49.0k", "95.1k", "136.7k", "176.9k"],
     [70.86, 36.51, 25.40, 19.62], [65.3, 63.5, 61.3, 59.0], [52.2, 101.4, 146.9, 188.5]),
    (6144, "Megatron-LM", [3072, 6144, 8192, 12288], [29.02, 14.78, 12.24, 8.57], ["433.6k", "851.6k", "1027.9k", "1466.8k"],
     [8.01, 4.08, 3.38, 2.37], [48.7, 47.8, 43.3, 41.2], [466.8, 916.3, 1106.7, 1579.5]),
    (6144, "MegaScale", [3072, 6144, 8192, 12288], [23.66, 12.21, 9.56, 6.34], ["531.9k", "1030.9k", "1315.6k", "1984.0k"],
     [6.53, 3.37, 2.64, 1.75], [59.1, 57.3, 54.9, 55.2], [566.5, 1098.4, 1400.6, 2166.3]),
]
SPEEDUP = {(768, 256): 1.23, (768, 512): 1.27, (768, 768): 1.31, (768, 1024): 1.32,
           (6144, 3072): 1.21, (6144, 6144): 1.19, (6144, 8192): 1.26, (6144, 12288): 1.34}
MODEL = {"name": "gpt-175b (MegaScale Table 1)", "params_billion": 175, "layers": 96, "hidden": 12288, "heads": 128,
         "kv_heads": 128, "ffn_hidden": 49152, "seq_len": 2048, "vocab": 64000}


def base(id_, gb, gpus):
    return {
        "id": id_, "model": dict(MODEL), "global_batch_sequences": gb, "micro_batch": None, "gpus": gpus,
        "gpu_type": "NVIDIA Ampere GPUs (paper's words; A100 not named in the text read; MFU reproduces with a 312 TFLOP/s peak)",
        "network": "ByteDance datacenter: 3-layer CLOS of Broadcom Tomahawk 4 switches (64 x 400 Gb/s), 1:1 up/down, 8 x 200 Gb/s NICs per 8-GPU server multi-rail to 8 ToR switches (Section 3.6)",
        "parallelism": {"dp": gpus // 64, "tp": 8, "pp": 8, "cp": 1, "virtual_stages": 6,
                        "schedule": "interleaved 1F1B, six interleaving stages for 175B (Section 6.1)"},
        "precision": "not stated (mixed precision assumed; MFU consistent with a 312 TFLOP/s 16-bit peak)",
    }


out = []
for gb, method, gpus, times, toks, days, mfu, pf in T2:
    for i, g in enumerate(gpus):
        r = base(f"megascale-175b-{'megatron' if method == 'Megatron-LM' else 'megascale'}-{g}gpu-bs{gb}", gb, g)
        if method == "Megatron-LM":
            r["parallelism"]["weight_update"] = "Megatron-LM commit 285068c8 data-parallel gradient reduction (distributed optimizer / overlap settings not stated)"
            r["recompute"] = "not stated"
            r["sequence_parallel"] = "not stated"
            r["system"] = "Megatron-LM baseline (commit 285068c8), same network optimizations as MegaScale per Section 6.1"
        else:
            r["parallelism"]["weight_update"] = "ZeRO-2 style sharded data parallel, reduce-scatter/all-gather overlapped per model chunk (Sections 2-3.2)"
            r["recompute"] = "not stated"
            r["sequence_parallel"] = True
            r["system"] = "MegaScale: parallel transformer block, sliding-window attention, LAMB, TP/PP/DP communication overlap, FlashAttention-2, fused LayerNorm/GeLU (Section 3)"
            r["speedup_vs_megatron"] = SPEEDUP[(gb, g)]
        r["measured"] = {"iteration_time_s": times[i], "tokens_per_s_printed": toks[i], "mfu_percent": mfu[i],
                         "aggregate_pflops": pf[i], "training_days_300B_tokens": days[i]}
        r["mfu"] = mfu[i] / 100
        r["mfu_definition"] = ("MFU per the paper (Section 1, after Narayanan et al.); not given as a formula. For Megatron-LM rows, "
                               "(6N + 12 L h s) FLOPs per token x tokens/s / GPUs / 312 TFLOP/s reproduces the column within 0.2 points. "
                               "For MegaScale rows the same formula gives 0.2-1.0 points MORE than printed (consistent with counting the "
                               "sliding-window attention's smaller FLOPs; not stated). The Aggregate PFlops/s column is NOT consistent "
                               "with MFU x 312 x GPUs (ratio 0.93-1.02 across rows); its definition is not stated.")
        r["source_row"] = f"Table 2, batch {gb}, {method}, {g} GPUs: iteration {times[i]} s, {toks[i]} tokens/s, {days[i]} days, MFU {mfu[i]}%, {pf[i]} PFlops/s"
        r["note"] = "dp = GPUs / (TP 8 x PP 8) is derived from Table 1; micro-batch not stated." + (
            " MegaScale rows run a MODIFIED model (parallel block + sliding-window attention) with LAMB; their MFU uses the standard model's FLOPs." if method == "MegaScale" else "")
        out.append(r)
r = base("megascale-175b-megatron-256gpu-bs256", 256, 256)
r["parallelism"]["weight_update"] = "Megatron-LM baseline (commit 285068c8)"
r["recompute"] = "not stated"
r["sequence_parallel"] = "not stated"
r["system"] = "Megatron-LM baseline with MegaScale's networking optimizations on (Section 6.1 ablation)"
r["measured"] = {"mfu_percent": 47.7}
r["mfu"] = 0.477
r["source_row"] = "Table 3 row 1: |1|baseline|47.7%| ; caption: 175B model with 256 GPUs and batch size 256"
r["note"] = "No iteration time given; dp 4 derived; the same ablation's final row (LAMB, batch x3 = 768) is 65.3%, equal to Table 2's MegaScale 256-GPU row."
out.append(r)
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
