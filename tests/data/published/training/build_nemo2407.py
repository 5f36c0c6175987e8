#!/usr/bin/env python3
"""Writes nemo2407-h100-fp8.json from nemo2407-h100-fp8.rows.md (dense rows with a sourced architecture only).
Run: python3 build_nemo2407.py > nemo2407-h100-fp8.json"""
import json
import sys

ARCH = {  # layers, hidden, heads, kv_heads, ffn, vocab, gated
    "GPT3-175B": (96, 12288, 96, 96, 49152, 51200, False),
    "LLAMA2-13B": (40, 5120, 40, 40, 13824, 32000, True),
    "LLAMA2-70B": (80, 8192, 64, 8, 28672, 32000, True),
    "LLAMA3-8B": (32, 4096, 32, 8, 14336, 128256, True),
    "LLAMA3-70B": (80, 8192, 64, 8, 28672, 128256, True),
}
rows = []
for line in open("nemo2407-h100-fp8.rows.md", encoding="utf-8"):
    if not line.startswith("| ") or "Model " in line:
        continue
    f = [c.strip() for c in line.strip().strip("|").split("|")]
    if f[0] not in ARCH:
        continue
    name, gpus, gbs, mbs, seq, tp, pp, cp, vp, tps, tfl, days = f[:12]
    gpus, gbs, mbs, seq, tp, pp, cp, vp, tps = map(int, (gpus, gbs, mbs, seq, tp, pp, cp, vp, tps))
    tfl = int(tfl.split("]")[0].strip("[")) if tfl.startswith("[") else int(tfl)
    L, h, a, kv, ffn, V, gated = ARCH[name]
    dp = gpus // (tp * pp * cp)
    rows.append({
        "id": f"nemo2407-{name.lower()}-{gpus}gpu-fp8",
        "model": {"name": name.lower(), "layers": L, "hidden": h, "heads": a, "kv_heads": kv, "ffn_hidden": ffn,
                  "seq_len": seq, "vocab": V, "gated_mlp": gated},
        "global_batch_sequences": gbs, "micro_batch": mbs, "gpus": gpus,
        "gpu_type": "H100-SXM-80GB (DGX-H100)",
        "network": "DGX-H100 system; fabric not stated in the table",
        "parallelism": {"dp": dp, "tp": tp, "pp": pp, "cp": cp, "vp": vp,
                        "schedule": "interleaved 1F1B" if vp > 1 else ("1F1B" if pp > 1 else "no pipeline"),
                        "weight_update": "not stated (NeMo 24.07 defaults: Megatron distributed optimizer, not verified)"},
        "recompute": "not stated",
        "sequence_parallel": "not stated",
        "precision": "fp8 (Transformer Engine; scaling recipe not stated in this table), DGX-H100",
        "measured": {"tokens_per_s_per_gpu": tps, "model_tflops_per_gpu": tfl},
        "derived": {"step_time_s": round(gbs * seq / (tps * gpus), 3),
                    "note": "derived here: GBS x seq / (tokens/s/GPU x GPUs)"},
        "source_row": line.strip(),
        "note": "FP8 pre-training (NeMo 24.07). dp = GPUs / (TP x PP x CP) derived." + (
            " The TFLOP cell of this row links to MLCommons training results (MLPerf GPT-3 configuration)." if "mlcommons" in line else ""),
    })
json.dump(rows, sys.stdout, indent=1)
sys.stdout.write("\n")
