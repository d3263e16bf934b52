#!/usr/bin/env python3
"""Writes bench/calibrate/runs/<id>/: the runs calibrate.py measures on a GPU.

Each folder holds the four inputs shardplan and calibrate.py both read (config.json,
cluster.yaml, workload.yaml, layout.txt). Every knob the harness sets is written out
(precision, master weights, optimizer, loss, recomputation), so the estimate needs no
framework default to agree with what ran. The set spans what the stored runs must cover:
dense 1B-70B (the large ones sharded), an MoE model, FSDP degree 1-64, TP 1-8,
recomputation none/selective/full, micro-batch 1-8, sequence 1k-16k, AdamW, SGD and 8-bit
AdamW, bf16 and fp32, LoRA on a frozen base, runs that must not fit, and serving with
transformers' generate at several batch sizes and context lengths (its KV cache).

    python3 bench/calibrate/make_runs.py [--out DIR]   # rewrites runs/ (standard library only)
"""
import argparse
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "configs", "models")
OUT = os.path.join(HERE, "runs")

# meta-llama/Llama-3.2-1B config.json (the project ships no 1B config).
LLAMA_32_1B = {
    "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}
MODEL_FILES = {"l8b": "llama-3.1-8b.json", "l2-7b": "llama-2-7b.json", "l13b": "llama-2-13b.json",
               "l70b": "llama-3.1-70b.json", "q8b": "qwen3-8b.json", "q30b": "qwen3-30b-a3b.json",
               "m7b": "mistral-7b.json", "qw7b": "qwen2.5-7b.json"}

# QLoRA's usual adapters: rank 16 on every linear of the layer.
QLORA = {"rank": 16, "targets": ["all-linear"]}

# (id, model, framework, dp, tp, mbs, seq, ac, workload extras). Workload defaults: pretrain,
# bf16 with fp32 master weights, AdamW, the standard loss.
RUNS = [
    # Llama-3.2-1B on one GPU: precision, optimizer, recomputation, micro-batch.
    ("l1b-hf-pure-bf16-s2k-b4", "l1b", "hf", 1, 1, 4, 2048, "none", {"master_weights": "none"}),
    ("l1b-hf-amp-s2k-b4-full", "l1b", "hf", 1, 1, 4, 2048, "full", {}),
    ("l1b-hf-fp32-s1k-b2", "l1b", "hf", 1, 1, 2, 1024, "none", {"precision": "fp32"}),
    ("l1b-hf-amp-sgd-s2k-b8-full", "l1b", "hf", 1, 1, 8, 2048, "full", {"optimizer": "sgd"}),
    ("l1b-hf-amp-sgdm-s4k-b2", "l1b", "hf", 1, 1, 2, 4096, "none", {"optimizer": "sgd-momentum"}),
    ("l1b-hf-pure-adamw8bit-s2k-b4-full", "l1b", "hf", 1, 1, 4, 2048, "full",
     {"master_weights": "none", "optimizer": "adamw-8bit"}),
    ("l1b-hf-amp-s16k-b8-oom", "l1b", "hf", 1, 1, 8, 16384, "none", {}),
    ("l1b-tt-fsdp8-s8k-b2-sel", "l1b", "torchtitan", 8, 1, 2, 8192, "selective", {}),
    ("l1b-tt-fsdp8-s16k-b1-full", "l1b", "torchtitan", 8, 1, 1, 16384, "full", {}),
    # Llama-3.1-8B: FSDP 2-64, TP 2-8, recomputation, fp32, pure bf16, LoRA.
    ("l8b-tt-fsdp8-s8k-b1-sel", "l8b", "torchtitan", 8, 1, 1, 8192, "selective", {}),
    ("l8b-tt-fsdp8-s8k-b2-full", "l8b", "torchtitan", 8, 1, 2, 8192, "full", {}),
    ("l8b-tt-fsdp8-s4k-b1-none", "l8b", "torchtitan", 8, 1, 1, 4096, "none", {}),
    ("l8b-tt-fsdp16-s8k-b1-sel", "l8b", "torchtitan", 16, 1, 1, 8192, "selective", {}),
    ("l8b-tt-fsdp32-s16k-b1-full", "l8b", "torchtitan", 32, 1, 1, 16384, "full", {}),
    ("l8b-tt-fsdp64-s8k-b4-full", "l8b", "torchtitan", 64, 1, 4, 8192, "full", {}),
    ("l8b-tt-fsdp2-s4k-b2-full", "l8b", "torchtitan", 2, 1, 2, 4096, "full", {}),
    ("l8b-tt-fsdp4-tp2-s8k-b2-sel", "l8b", "torchtitan", 4, 2, 2, 8192, "selective", {}),
    ("l8b-tt-fsdp2-tp4-s8k-b4-full", "l8b", "torchtitan", 2, 4, 4, 8192, "full", {}),
    ("l8b-tt-tp8-s4k-b8-full", "l8b", "torchtitan", 1, 8, 8, 4096, "full", {}),
    ("l8b-tt-fsdp8-fp32-s4k-b2-full", "l8b", "torchtitan", 8, 1, 2, 4096, "full", {"precision": "fp32"}),
    ("l8b-tt-fsdp8-pure-s8k-b2-full", "l8b", "torchtitan", 8, 1, 2, 8192, "full", {"master_weights": "none"}),
    ("l8b-tt-fsdp8-sgd-s8k-b2-sel", "l8b", "torchtitan", 8, 1, 2, 8192, "selective", {"optimizer": "sgd"}),
    # Measured with embeddings and head in the root, which torchtune's own Llama 3 configs shard apart.
    ("l8b-tune-fsdp8-s4k-b2-full", "l8b", "torchtune", 8, 1, 2, 4096, "full",
     {"task": "finetune", "master_weights": "none", "loss": "chunked", "custom_sharded_layers": []}),
    ("l8b-tune-lora-1gpu-s4k-b2-full", "l8b", "torchtune", 1, 1, 2, 4096, "full",
     {"task": "lora", "master_weights": "none", "loss": "chunked", "lora": {"rank": 8, "targets": ["q_proj", "v_proj"]}}),
    ("l8b-tune-lora-fsdp2-s4k-b4-full", "l8b", "torchtune", 2, 1, 4, 4096, "full",
     {"task": "lora", "master_weights": "none", "loss": "chunked", "lora": {"rank": 16, "targets": ["all-linear"]}}),
    ("l8b-hf-lora-pure-s4k-b2-full", "l8b", "hf", 1, 1, 2, 4096, "full",
     {"task": "lora", "master_weights": "none", "lora": {"rank": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"]}}),
    ("l8b-hf-lora-amp-s2k-b4-full", "l8b", "hf", 1, 1, 4, 2048, "full",
     {"task": "lora", "lora": {"rank": 8, "targets": ["q_proj", "v_proj"]}}),
    ("l8b-hf-amp-s2k-b1-oom", "l8b", "hf", 1, 1, 1, 2048, "full", {"task": "finetune"}),
    # QLoRA as TRL's SFTTrainer runs it (NF4 base, peft's kbit preparation, bf16 autocast), and
    # as LLaMA-Factory does (no preparation); Llama-3.1-70B at the longest sequence Unsloth's
    # README gives for transformers + FA2 on 80 GB (6,916 tokens) and past it.
    ("l8b-hf-qlora-s2k-b4-full", "l8b", "hf", 1, 1, 4, 2048, "full", {"task": "qlora", "lora": QLORA}),
    ("l8b-hf-qlora-s8k-b1-full", "l8b", "hf", 1, 1, 1, 8192, "full", {"task": "qlora", "lora": QLORA}),
    ("l8b-hf-qlora-noprep-s4k-b2-full", "l8b", "hf", 1, 1, 2, 4096, "full",
     {"task": "qlora", "kbit_prepare": "false", "lora": QLORA}),
    ("l70b-hf-qlora-s4k-b1-full", "l70b", "hf", 1, 1, 1, 4096, "full", {"task": "qlora", "lora": QLORA}),
    ("l70b-hf-qlora-s8k-b1-full", "l70b", "hf", 1, 1, 1, 8192, "full", {"task": "qlora", "lora": QLORA}),
    ("l70b-hf-qlora-s6912-b1-full", "l70b", "hf", 1, 1, 1, 6912, "full", {"task": "qlora", "lora": QLORA}),
    # bitsandbytes' paged AdamW on a full fine-tune of Llama-3.1-8B in bf16: 32-bit states
    # (64 GB) that do not fit beside the model, 8-bit ones (16 GB) that do.
    ("l8b-hf-pure-paged32-s2k-b4-full", "l8b", "hf", 1, 1, 4, 2048, "full",
     {"task": "finetune", "master_weights": "none", "optimizer": "paged-adamw"}),
    ("l8b-hf-pure-paged8bit-s2k-b4-full", "l8b", "hf", 1, 1, 4, 2048, "full",
     {"task": "finetune", "master_weights": "none", "optimizer": "paged-adamw-8bit"}),
    # torchtitan's wrapping from 2025-07-28 (release: stated): embeddings a unit of their own,
    # [norm, output] another, every block resharded after forward.
    ("l8b-tt-fsdp8-s8k-b2-full-r2508", "l8b", "torchtitan", 8, 1, 2, 8192, "full", {"release": "2025-08"}),
    ("l8b-tt-fsdp8-s4k-b1-none-r2508", "l8b", "torchtitan", 8, 1, 1, 4096, "none", {"release": "2025-08"}),
    ("q8b-tt-fsdp8-s4k-b2-sel-r2508", "q8b", "torchtitan", 8, 1, 2, 4096, "selective", {"release": "2025-08"}),
    ("l70b-tt-fsdp64-s8k-b1-full-r2508", "l70b", "torchtitan", 64, 1, 1, 8192, "full", {"release": "2025-08"}),
    # Other dense families.
    ("q8b-tt-fsdp8-s4k-b2-sel", "q8b", "torchtitan", 8, 1, 2, 4096, "selective", {}),
    ("q8b-tt-fsdp4-tp2-s4k-b2-full", "q8b", "torchtitan", 4, 2, 2, 4096, "full", {}),
    ("m7b-tt-fsdp8-s8k-b1-none", "m7b", "torchtitan", 8, 1, 1, 8192, "none", {}),
    ("l2-7b-tt-fsdp8-s4k-b8-full", "l2-7b", "torchtitan", 8, 1, 8, 4096, "full", {}),
    ("qw7b-tt-fsdp8-s4k-b4-full", "qw7b", "torchtitan", 8, 1, 4, 4096, "full", {}),
    ("l13b-tt-fsdp16-s4k-b2-full", "l13b", "torchtitan", 16, 1, 2, 4096, "full", {}),
    ("l13b-tt-fsdp8-tp2-s4k-b4-sel", "l13b", "torchtitan", 8, 2, 4, 4096, "selective", {}),
    # Llama-3.1-70B, sharded.
    ("l70b-tt-fsdp64-s8k-b1-full", "l70b", "torchtitan", 64, 1, 1, 8192, "full", {}),
    ("l70b-tt-fsdp64-s4k-b2-sel", "l70b", "torchtitan", 64, 1, 2, 4096, "selective", {}),
    ("l70b-tt-fsdp64-s16k-b1-full", "l70b", "torchtitan", 64, 1, 1, 16384, "full", {}),
    ("l70b-tt-fsdp32-tp2-s8k-b1-full", "l70b", "torchtitan", 32, 2, 1, 8192, "full", {}),
    ("l70b-tt-fsdp8-tp8-s8k-b2-full", "l70b", "torchtitan", 8, 8, 2, 8192, "full", {}),
    ("l70b-tt-fsdp16-tp4-s4k-b4-sel", "l70b", "torchtitan", 16, 4, 4, 4096, "selective", {}),
    ("l70b-tt-fsdp8-s4k-b1-full-oom", "l70b", "torchtitan", 8, 1, 1, 4096, "full", {}),
    ("l70b-tune-lora-fsdp8-s4k-b2-full", "l70b", "torchtune", 8, 1, 2, 4096, "full",
     {"task": "lora", "master_weights": "none", "loss": "chunked", "lora": {"rank": 16, "targets": ["q_proj", "k_proj", "v_proj"]}}),
    # Qwen3-30B-A3B (MoE, 128 experts), experts sharded by FSDP (no expert parallelism).
    ("q30b-tt-fsdp8-s4k-b1-full", "q30b", "torchtitan", 8, 1, 1, 4096, "full", {}),
    ("q30b-tt-fsdp16-s4k-b2-full", "q30b", "torchtitan", 16, 1, 2, 4096, "full", {}),
    ("q30b-tt-fsdp32-s8k-b1-sel", "q30b", "torchtitan", 32, 1, 1, 8192, "selective", {}),
]


# Serving with transformers' generate on one GPU: (id, model, batch, prompt, generated, dtype).
SERVING = [
    ("l8b-gen-b1-p2k-g256", "l8b", 1, 2048, 256, "bf16"),
    ("l8b-gen-b8-p2k-g256", "l8b", 8, 2048, 256, "bf16"),
    ("l8b-gen-b32-p1k-g128", "l8b", 32, 1024, 128, "bf16"),
    ("l8b-gen-b4-p8k-g128", "l8b", 4, 8192, 128, "bf16"),
    ("l1b-gen-b64-p4k-g128", "l1b", 64, 4096, 128, "bf16"),
    ("q8b-gen-b16-p4k-g256", "q8b", 16, 4096, 256, "bf16"),
    ("m7b-gen-b8-p16k-g64", "m7b", 8, 16384, 64, "bf16"),
    ("l13b-gen-b8-p4k-g256-fp16", "l13b", 8, 4096, 256, "fp16"),
]


def config_of(model):
    if model == "l1b":
        return dict(LLAMA_32_1B)
    with open(os.path.join(MODELS, MODEL_FILES[model])) as f:
        return json.load(f)


def yaml_text(mapping, indent=0):
    """The small YAML these files need (scalars, one nested mapping, lists of names)."""
    out = []
    pad = " " * indent
    for k, v in mapping.items():
        if isinstance(v, dict):
            out.append(f"{pad}{k}:")
            out.append(yaml_text(v, indent + 2))
        elif isinstance(v, list):
            out.append(f"{pad}{k}: [{', '.join(str(x) for x in v)}]")
        else:
            out.append(f"{pad}{k}: {v}")
    return "\n".join(out)


def write_run(out, ids, rid, model, world, workload, layout):
    """One run's four input files; the cluster is the GPU it will run on, world dp x tp GPUs
    (calibrate.py rewrites it with the device it measured)."""
    assert rid not in ids, rid
    ids.add(rid)
    d = os.path.join(out, rid)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config_of(model), f, indent=2)
        f.write("\n")
    cluster = {"name": rid, "nodes": max(1, -(-world // 8)), "gpus_per_node": min(world, 8), "gpu": "H100-SXM 80GB"}
    for name, text in (("cluster.yaml", yaml_text(cluster)), ("workload.yaml", yaml_text(workload)),
                       ("layout.txt", layout)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT)
    out = ap.parse_args().out
    if os.path.isdir(out):
        shutil.rmtree(out)
    ids = set()
    for rid, model, framework, dp, tp, mbs, seq, ac, extra in RUNS:
        # adamw_torch: torch's AdamW with foreach=True, the step calibrate.py runs (HF Trainer's
        # name for it), so that the estimate prices that step and not a fused kernel.
        workload = {"task": "pretrain", "precision": "bf16", "master_weights": "fp32", "optimizer": "adamw_torch",
                    "loss": "standard", "seq_len": seq, "global_batch": mbs * dp, "compile": "false"}
        workload.update(extra)
        if workload["precision"] == "fp32":
            workload["master_weights"] = "none"  # fp32 training has no separate master copy
        zero = 3 if dp > 1 else 0
        write_run(out, ids, rid, model, dp * tp, workload,
                  f"framework={framework},dp={dp},tp={tp},zero={zero},mbs={mbs},ac={ac}")
    for rid, model, batch, prompt, gen, dtype in SERVING:
        workload = {"task": "inference", "precision": dtype,
                    "inference": {"batch": batch, "prompt_len": prompt, "gen_len": gen, "weights": dtype,
                                  "kv_cache": dtype, "engine": "transformers"}}
        write_run(out, ids, rid, model, 1, workload, f"framework=hf,dp=1,tp=1,batch={batch}")
    print(f"wrote {len(ids)} runs to {os.path.relpath(out)}")


if __name__ == "__main__":
    main()
