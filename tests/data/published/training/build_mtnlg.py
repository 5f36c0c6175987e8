#!/usr/bin/env python3
"""Writes smith2022-mtnlg-530b.json from smith2022-mtnlg-530b.rows.md (secondary transcriptions; see SOURCE).
Run: python3 build_mtnlg.py > smith2022-mtnlg-530b.json"""
import json
import sys

out = []
for nodes, t, tf in [(280, 60.1, 126), (350, 50.2, 121), (420, 44.4, 113)]:
    gpus = nodes * 8
    dp = gpus // (8 * 35)
    r = {
        "id": f"mtnlg-530b-{gpus}gpu",
        "model": {"name": "mt-nlg-530b", "params_billion": 530, "layers": 105, "hidden": 20480, "heads": 128,
                  "kv_heads": 128, "ffn_hidden": 81920, "seq_len": 2048, "vocab": 50272},
        "vocab_source": "NOT in the stored primary text; 50272 is the llm-analysis model config (cli99/llm-analysis, secondary). The tokenizer/padded vocabulary of MT-NLG was not found in a stored source.",
        "global_batch_sequences": 1920,
        "micro_batch": None,
        "gpus": gpus,
        "gpu_type": "A100-SXM-80GB (NVIDIA Selene, DGX A100 nodes)",
        "network": "Selene: NVLink/NVSwitch within a node; 200 Gb/s HDR InfiniBand between nodes, three-level fat tree (secondary note B)",
        "parallelism": {"dp": dp, "tp": 8, "pp": 35, "cp": 1,
                        "weight_update": "DeepSpeed data parallel (ZeRO stage 1 per a secondary summary, not verified in the paper)",
                        "schedule": "1F1B (paper quote via secondary note); interleaving not stated"},
        "recompute": "full activation checkpointing per transformer block (implied: the 126/121/113 TFLOP/s reproduce with Megatron's 96 B s l h^2 (1 + s/6h + V/16lh) recompute-inclusive formula; the paper text on checkpointing was not read)",
        "precision": "bf16 mixed precision (paper quote via secondary notes), A100 peak 312 TFLOP/s",
        "sequence_parallel": False,
        "measured": {"iteration_time_s": t, "tflops_per_gpu": tf},
        "derived": {"tokens_per_s": round(1920 * 2048 / t, 1),
                    "note": "derived here: 1920 x 2048 / iteration time"},
        "source_row": f"MT-NLG Section 2.4 via secondary transcriptions: batch 1920 on {nodes} DGX A100 servers, iteration time {t} s, {tf} teraFLOP/s per GPU",
        "note": "Benchmark of the training system, not a full run. dp = GPUs / (8 x 35) is derived; the paper states data parallelism scales the 280-GPU replica. Micro-batch size NOT FOUND.",
    }
    if nodes == 280:
        r["mfu_palm"] = {"without_attention": 0.297, "with_attention": 0.302,
                         "source": "PaLM paper (Chowdhery et al. 2022) p9, via stored-file id 71571056092: 29.7% / 30.2% from 65.43K tokens/s"}
    out.append(r)
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
