#!/usr/bin/env python3
"""Builds llm-foundry-mpt-fsdp.json from the verbatim rows in llm-foundry-mpt-fsdp.rows.md.

Nothing is computed except unit conversions that are stated per field: MFU/HFU percent -> fraction,
the architecture comes from the llm-foundry yamls cited in the SOURCE file. Run from this folder:
  python3 rows_to_json.py > llm-foundry-mpt-fsdp.json
"""
import json
import sys

# scripts/train/yamls/pretrain/mpt-*.yaml (see llm-foundry-mpt-fsdp.SOURCE.txt): d_model, n_heads, n_layers,
# expansion_ratio 4, vocab_size 50368
ARCH = {
    "70b": (80, 8192, 64), "30b": (48, 7168, 56), "13b": (40, 5120, 40),
    "7b": (32, 4096, 32), "3b": (32, 2560, 20), "1b": (24, 2048, 16),
}
GPU = {"h100_80gb": "H100-SXM-80GB", "a100_80gb": "A100-SXM-80GB", "a100_40gb": "A100-SXM-40GB"}
NET = {"h100_80gb": "not stated in the table (MosaicML platform H100 nodes)",
       "a100_80gb": "1600 Gbps node-node interconnect (RoCE) per the table title",
       "a100_40gb": "1600 Gbps node-node interconnect (RoCE) per the table title"}

out = []
for line in open("llm-foundry-mpt-fsdp.rows.md", encoding="utf-8"):
    f = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(f) != 20 or f[0] == "Model":
        continue
    (model, seq, gpus, gpu, mfu, hfu, tflop, mb, ga, gb, sps, tps, tpsg, gbt, prec, mp, shard, ckpt, offload,
     nparams) = f
    layers, hidden, heads = ARCH[model]
    out.append({
        "id": f"mpt-{model}-s{seq}-{gpus}x{gpu}",
        "model": {"name": f"mpt-{model}", "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads,
                  "ffn_hidden": 4 * hidden, "seq_len": int(seq), "vocab": 50368, "params": int(nparams),
                  "attention": "fused (MPT attn_impl triton/flash per the yamls; not recorded per run)"},
        "global_batch_sequences": int(gb),
        "micro_batch": int(mb),
        "grad_accum": int(ga),
        "gpus": int(gpus),
        "gpu_type": GPU[gpu],
        "network": NET[gpu],
        "parallelism": {"dp": int(gpus), "tp": 1, "pp": 1, "cp": 1,
                        "weight_update": f"FSDP {shard} (zero3-like), mixed precision {mp}"},
        "recompute": "full" if ckpt == "True" else "none",
        "activation_cpu_offload": offload == "True",
        "precision": prec,
        "sequence_parallel": False,
        "measured": {"samples_per_s": int(sps), "tokens_per_s": int(tps), "tokens_per_s_per_gpu": int(tpsg),
                     "note": "integers truncated by collect_results.py (int(throughput))"},
        "mfu": round(float(mfu) / 100, 6),
        "hfu": round(float(hfu) / 100, 6),
        "mfu_definition": "llm-foundry collect_results.py: (6 N + 12 L d s) x seq/s / (gpus x peak); peak = "
                          "composer GPU_AVAILABLE_FLOPS for the precision (dense BF16)",
        "source_row": line.rstrip("\n"),
    })
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
