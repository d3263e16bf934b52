#!/usr/bin/env python3
"""Writes bench/user_inputs/cases/<id>/ from bench/data/public_cases.yaml: for every published
run, the four inputs a user would type after reading its source, and what the source measured.

    config.json    the model's Hugging Face config: the published file when the run names a
                   released model (copied from configs/models), else one written from the
                   dimensions the source states, in the keys of its model_type
    cluster.yaml   the GPU as the source names it, the node count and GPUs per node; nothing
                   about links that the source does not state
    workload.yaml  task, sequence length, global batch, precision, optimizer, LoRA, serving
                   sizes and the recipe switches the source names (compile, chunked loss, ...)
    layout.txt     the --layout string: the framework the source ran, the degrees it states,
                   micro-batch, ZeRO stage, recomputation when stated, offload
    truth.json     the outcome: ran or OOM, the memory figure and what it measures, throughput

The rules below read each field the way a person would, and only what the field says; a run
whose source leaves a value out leaves it out here too, so the CLI's defaults answer for it.
There are no per-case annotations. Run it again after refreshing public_cases.yaml; the
folders it writes are committed so that anyone can rerun one case by hand:

    shardplan estimate --model cases/ID/config.json --cluster cases/ID/cluster.yaml \
        --workload cases/ID/workload.yaml --layout "$(cat cases/ID/layout.txt)"

Needs PyYAML (to read the research notes); score.py, which CI runs, needs only the stdlib.
"""
import json
import os
import re
import shutil
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(ROOT, "bench", "data", "public_cases.yaml")
MODELS = os.path.join(ROOT, "configs", "models")
OUT = os.path.join(HERE, "cases")
GIB = 1 << 30

TASKS = {"training-dense": "pretrain", "training-moe": "pretrain", "finetune-full": "finetune",
         "finetune-lora": "lora", "finetune-qlora": "qlora", "inference": "inference"}

# The framework each source's runs used, as its own README or paper states it.
FRAMEWORKS = {
    "bigscience-workshop/bigscience": "megatron-deepspeed",
    "deepspeedai/DeepSpeed": "deepspeed", "microsoft/DeepSpeed": "deepspeed",
    "huggingface/peft": "deepspeed",             # its examples run accelerate + DeepSpeed ZeRO-3 offload
    "foundation-model-stack/fms-fsdp": "fms-fsdp", "mosaicml/llm-foundry": "llm-foundry",
    "pytorch/torchtune": "torchtune", "pytorch/torchtitan": "torchtitan",
    "unslothai/unsloth": "hf",                   # the Hugging Face + FlashAttention-2 column
    "NVIDIA/Megatron-LM": "megatron-lm", "NVIDIA/NeMo": "nemo",
    "NVIDIA-NeMo/Megatron-Bridge": "megatron-bridge", "yanring/Megatron-MoE-ModelZoo": "megatron-core",
}

# Released models: a user downloads the published config.json. Checked in the order given.
RELEASED = [
    (r"llama[- ]?2[- ]?7b", "llama-2-7b.json"), (r"llama[- ]?2[- ]?13b", "llama-2-13b.json"),
    (r"llama[- ]?2[- ]?70b", "llama-2-70b.json"),
    (r"llama[- ]?3(\.[13])?[- ]?8b", "llama-3.1-8b.json"), (r"llama[- ]?3(\.[13])?[- ]?70b", "llama-3.1-70b.json"),
    (r"llama[- ]?3(\.1)?[- ]?405b", "llama-3.1-405b.json"),
    (r"qwen3-235b-a22b", "qwen3-235b-a22b.json"), (r"deepseek-v3", "deepseek-v3.json"),
    (r"mixtral 8x22b", "mixtral-8x22b.json"), (r"mixtral 8x7b", "mixtral-8x7b.json"),
]
# Released models the project does not ship, with the values of their published config.json.
PUBLISHED = {
    # meta-llama/Llama-3.1-405B-Instruct-FP8 config.json: the 405B config with its
    # quantization_config (fbgemm_fp8; lm_head, every attention projection and the MLPs of
    # layers 0 and 125 stay in bf16, named here by their common prefixes).
    r"llama[- ]?3\.1[- ]?405b.*fp8": {"base": "llama-3.1-405b.json", "quantization_config": {
        "quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
        "modules_to_not_convert": ["lm_head", "self_attn", "model.layers.0.mlp", "model.layers.125.mlp"]}},
    # foundation-model-stack/fms-fsdp fms_fsdp/utils/config_utils.py, variant llama2_34b
    # (emb_dim 8192, 64 heads, 8 KV heads, 48 layers, hidden 22016, vocab 32000): the
    # CodeLlama-34B shape, whose config.json a user passes.
    r"llama2-34b": {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 22016,
                    "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 8,
                    "vocab_size": 32000, "rope_theta": 1000000, "torch_dtype": "bfloat16"},
    # bigscience/bloomz-7b1 config.json
    r"bloomz-7b1": {"model_type": "bloom", "n_layer": 30, "hidden_size": 4096, "n_head": 32,
                    "vocab_size": 250880},
    # bigscience/mt0-xxl and bigscience/T0_3B config.json: encoder-decoder (T5) models
    r"mt0-xxl": {"model_type": "mt5", "d_model": 4096, "d_ff": 10240, "num_layers": 24,
                 "num_decoder_layers": 24, "num_heads": 64, "d_kv": 64, "vocab_size": 250112},
    r"t0_3b": {"model_type": "t5", "d_model": 1024, "d_ff": 16384, "num_layers": 24,
               "num_decoder_layers": 24, "num_heads": 32, "d_kv": 128, "vocab_size": 32128},
    # Nemotron-22B: NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/
    # nemotron_22b.yaml (commit 089b90e6), the recipe whose TP2 PP4 VP10 the NeMo table runs:
    # 40 layers, hidden 6144, ffn 24576, 48 heads with num_query_groups null (every head its
    # own KV), squared-relu, layernorm1p, no biases, rotary_percentage 0.5, untied embeddings.
    # The launcher leaves the tokenizer to the user; Nemotron's is the 256,000-token
    # SentencePiece model (Nemotron-4 15B report, sec. 2). In the keys of HF's `nemotron`.
    r"nemotron-22b": {"model_type": "nemotron", "hidden_size": 6144, "intermediate_size": 24576,
                      "num_hidden_layers": 40, "num_attention_heads": 48, "num_key_value_heads": 48,
                      "head_dim": 128, "hidden_act": "relu2", "partial_rotary_factor": 0.5,
                      "norm_eps": 1e-05, "max_position_embeddings": 4096, "vocab_size": 256000,
                      "tie_word_embeddings": False, "torch_dtype": "bfloat16"},
    # meta-llama/Llama-3.2-3B config.json
    r"llama[- ]?3\.2[- ]?3b": {"model_type": "llama", "hidden_size": 3072, "intermediate_size": 8192,
                            "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8,
                            "vocab_size": 128256, "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
}

FAMILY_TYPES = {"llama1": "llama", "llama2": "llama", "llama3": "llama", "mixtral": "mixtral",
                "qwen3-moe": "qwen3_moe", "deepseek-v3": "deepseek_v3", "bloom": "bloom", "gpt2": "gpt2",
                "gpt": "gpt2", "mpt": "mpt", "opt": "opt", "t5": "t5"}


def stated_int(v):
    """An integer the field states as a number; prose ("engine-chosen (up to 8192)") is None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def first_int(v):
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    m = re.search(r"\d[\d,_]*", str(v))
    return int(m.group(0).replace(",", "").replace("_", "")) if m else None


def int_after(text, key):
    m = re.search(re.escape(key) + r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


def config_for(case):
    """The config.json a user would pass, or None with the reason."""
    m = case["model"]
    name = str(m.get("name", "")).lower()
    for pattern, cfg in PUBLISHED.items():
        if re.search(pattern, name):
            cfg = dict(cfg)
            if "base" in cfg:
                with open(os.path.join(MODELS, cfg.pop("base"))) as f:
                    cfg = {**json.load(f), **cfg}
            return cfg, None
    for pattern, path in RELEASED:
        if re.search(pattern, name):
            with open(os.path.join(MODELS, path)) as f:
                return json.load(f), None
    family = str(m.get("family", "")).lower()
    if "t5" in name or "mt0" in name or "t0_" in name:
        family = "t5"
    mt = FAMILY_TYPES.get(family)
    if mt is None or not m.get("hidden") or not m.get("layers"):
        return None, "the source states no model dimensions a config.json could carry"
    h, L, heads = m["hidden"], m["layers"], m.get("heads") or m["hidden"] // 128
    vocab = m.get("vocab")
    if mt == "bloom":
        c = {"n_layer": L, "hidden_size": h, "n_head": heads}
    elif mt == "gpt2":
        c = {"n_layer": L, "n_embd": h, "n_head": heads, "n_positions": first_int(m.get("seq_len")) or 2048}
        if m.get("ffn"):
            c["n_inner"] = m["ffn"]
    elif mt == "mpt":
        c = {"n_layers": L, "d_model": h, "n_heads": heads, "max_seq_len": first_int(m.get("seq_len")) or 2048,
             "expansion_ratio": (m.get("ffn") or 4 * h) // h}
        if m.get("attn_impl"):  # the attention kernel the run's scripts chose
            c["attn_config"] = {"attn_impl": m["attn_impl"]}
    elif mt == "opt":
        c = {"num_hidden_layers": L, "hidden_size": h, "num_attention_heads": heads, "ffn_dim": m.get("ffn") or 4 * h}
    elif mt == "t5":
        c = {"d_model": h, "num_layers": L, "num_heads": heads}
    else:
        c = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
             "num_key_value_heads": m.get("kv_heads") or heads, "intermediate_size": m.get("ffn")}
        if m.get("head_dim"):
            c["head_dim"] = m["head_dim"]
        if mt == "mixtral":
            c.update(intermediate_size=m.get("moe_ffn") or m.get("ffn"), num_local_experts=m.get("experts"),
                     num_experts_per_tok=m.get("topk"))
        if mt == "qwen3_moe":
            c.update(num_experts=m.get("experts"), num_experts_per_tok=m.get("topk"),
                     moe_intermediate_size=m.get("moe_ffn"))
        # Llama-style configs say whether the head is tied; the source gives params_b, so the
        # choice that matches it is the published one.
        if mt == "llama" and vocab and m.get("params_b"):
            kv = c["num_key_value_heads"]
            hd = m.get("head_dim") or h // heads
            ffn = m.get("ffn") or 0
            layer = h * hd * (heads + 2 * kv) + heads * hd * h + 3 * h * ffn + 2 * h
            untied = L * layer + 2 * vocab * h + h
            if abs(untied - vocab * h - m["params_b"] * 1e9) < abs(untied - m["params_b"] * 1e9):
                c["tie_word_embeddings"] = True
    cfg = {"model_type": mt}
    cfg.update({k: v for k, v in c.items() if v is not None})
    if vocab:
        cfg["vocab_size"] = vocab
    return cfg, None


def gpu_for(cluster):
    """The GPU as a user names it: the source's words without the parenthetical, or a
    mapping with its memory when the source names only a size."""
    words = str(cluster["gpu"])
    text = re.sub(r"\(.*?\)", "", words).strip()
    text = re.sub(r"\s+", " ", text)
    # A source that states the cards' power cap or memory bandwidth ("500W power-capped",
    # "2.4 TB/sec peak memory bandwidth") gets them in the mapping, with the stated size.
    power = re.search(r"(\d+) ?W power", words)
    if power or cluster.get("memory_bandwidth"):
        gpu = {"name": text}
        size = re.search(r"(\d+) ?GB", text)
        if size:
            gpu["memory"] = f"{size.group(1)} GiB"  # HBM stacks are binary sizes, as the name rule reads them
        if cluster.get("memory_bandwidth"):
            gpu["memory_bandwidth"] = cluster["memory_bandwidth"]
        if power:
            gpu["power_limit"] = f"{power.group(1)} W"
        return gpu
    if re.fullmatch(r"\d+ ?GB GPU", text, re.I):
        return {"name": text, "memory": f"{first_int(text)} GB"}
    if text.upper() == "A100":  # "A100 (40 vs 80GB not stated; 80GB likely)"
        return "A100 80GB"
    return text


def inter_node_for(text, per_node):
    """The network between nodes as the source words it: "4x OmniPath (100Gbps)", "8x
    200Gb/s HDR IB per node", "400 Gb/s per GPU", "800 Gbps" (per node)."""
    if not text:
        return None
    t = str(text)
    m = re.search(r"(\d+)x [^,;]*?\(?(\d+) ?Gb(?:ps|/s)", t)
    if m:
        return {"bandwidth": f"{m.group(2)} Gb/s", "nics_per_node": int(m.group(1))}
    m = re.search(r"(\d+) ?Gb(?:ps|/s) per GPU", t)
    if m:
        return {"bandwidth": f"{m.group(1)} Gb/s", "nics_per_node": per_node}
    m = re.search(r"(\d+) ?Gb(?:ps|/s)", t)
    if m:
        return {"bandwidth": f"{m.group(1)} Gb/s", "nics_per_node": 1}
    return None


def cluster_for(case):
    c = case["cluster"]
    total = first_int(c.get("total_gpus")) or 1
    per_node = min(first_int(c.get("gpus_per_node")) or 1, total)
    out = {"name": case["id"], "nodes": max(1, total // per_node), "gpus_per_node": per_node, "gpu": gpu_for(c)}
    link = inter_node_for(c.get("interconnect"), per_node)
    if link and total > per_node:
        out["inter_node"] = link
    if first_int(c.get("cpu_ram_gb")):
        out["host"] = {"memory": f"{first_int(c['cpu_ram_gb'])} GB"}
    return out


def precision_of(text):
    t = text.lower()
    if "4-bit" in t:
        return "bf16"
    if "fp32" in t:
        return "fp32"
    if "fp8" in t or "float8" in t:
        return "fp8"
    if "fp16" in t and "bf16" not in t:
        return "fp16"
    return "bf16"


LORA_TARGETS = {"q": ["q_proj"], "k": ["k_proj"], "v": ["v_proj"], "o": ["o_proj"], "output_proj": ["o_proj"],
                "gate": ["gate_proj"], "up": ["up_proj"], "down": ["down_proj"],
                "mlp": ["gate_proj", "up_proj", "down_proj"]}


def lora_for(peft):
    out = {}
    r = int_after(peft, "r=")
    if r:
        out["rank"] = r
    on = peft.find(" on ")
    if on >= 0:
        words = peft[on + 4:].lower()
        if "all linear" in words:
            out["targets"] = ["all-linear"]
        else:
            targets = []
            for w in re.split(r"[^a-z0-9_]+", words):
                for t in LORA_TARGETS.get(w, []):
                    if t not in targets:
                        targets.append(t)
            if targets:
                out["targets"] = targets
    return out


def longest_served(outcome):
    best = None
    for key, table in outcome.items():
        if "isl_osl" not in key or not isinstance(table, dict):
            continue
        for pair in table:
            isl, _, osl = str(pair).partition("/")
            if isl.isdigit() and osl.isdigit() and (best is None or int(isl) + int(osl) > sum(best)):
                best = (int(isl), int(osl))
    return best


# torchtune's memory/speed ladder (README table): every row adds its technique to the rows
# above it, in this order. A row's recipe is its own technique and all earlier ones.
TORCHTUNE_LADDER = [("packed", {}), ("compile", {"compile": True}), ("chunked", {"loss": "chunked"}),
                    ("activation checkpointing", {"ac": "full"}),
                    ("backward", {"optimizer_in_backward": True})]


def ladder_recipe(case):
    note = str(case.get("notes", "")).lower()
    knobs = str(case["layout"].get("knobs", "")).lower()
    if "cumulative ablation" not in note or not knobs:
        return None
    recipe = {"loss": "standard", "ac": "none"}
    for word, adds in TORCHTUNE_LADDER:
        recipe.update(adds)
        if word in knobs:
            return recipe
    return None


def workload_for(case):
    m, l, o = case["model"], case["layout"], case["outcome"]
    task = TASKS[case["category"]]
    prec_text = str(l.get("precision", ""))
    w = {"task": task, "precision": precision_of(prec_text)}
    if w["precision"] == "fp8" and "rowwise" in prec_text.lower():  # the scaling the source names
        w["fp8_recipe"] = "rowwise"
    seq = first_int(m.get("seq_len"))
    if "max_seq_len_fits_hf_fa2" in o:  # max-context tables: the HF + FA2 column's length
        seq = first_int(o["max_seq_len_fits_hf_fa2"]) or 1024
    opt = str(l.get("optimizer", "")).lower().replace(" ", "")
    if opt:
        w["optimizer"] = {"adamwbf16": "adamw"}.get(opt, opt)
    release = case.get("source", {}).get("framework_release")
    if release:  # the framework's version, where the source names it (a commit or tag, dated)
        w["release"] = str(release)
    if task != "inference":
        if seq:
            w["seq_len"] = seq
        gb = first_int(l.get("global_batch"))
        if first_int(l.get("local_batch_per_dp_rank")):
            gb = first_int(l["local_batch_per_dp_rank"]) * (first_int(l.get("dp")) or 1)
        if gb:
            w["global_batch"] = gb
        if task in ("lora", "qlora") and l.get("peft"):
            lora = lora_for(str(l["peft"]))
            if lora:
                w["lora"] = lora
        knobs = (str(l.get("knobs", "")) + " " + str(l.get("recompute", ""))).lower()
        if l.get("torch_compile") is True or "compile" in knobs:
            w["compile"] = True
        if "chunked" in knobs:
            w["loss"] = "chunked"
        if "optim" in knobs and "bwd" in knobs or "optimizer_in_backward" in knobs:
            w["optimizer_in_backward"] = True
        if "activation offload" in knobs:
            w["activation_offload"] = True
        # Composer's FSDP mixed_precision PURE sets the gathered, reduced and buffer dtypes to
        # bf16; the sharded parameters stay the fp32 model's (FSDP's MixedPrecision), so it
        # states nothing about master weights.
        ladder = ladder_recipe(case)
        if ladder:
            w.update({k: v for k, v in ladder.items() if k != "ac"})
        return w
    inf = {"batch": 1}
    t = prec_text.lower()
    if "fp4" in t:
        inf["weights"] = "int4"
    elif "fp8" in t:
        inf["weights"] = "fp8"
    elif "int8" in t:
        inf["weights"] = "int8"
    elif "int4" in t:
        inf["weights"] = "int4"
    if "fp16 kv" in t:
        inf["kv_cache"] = "fp16"
    if l.get("gpu_memory_utilization"):
        inf["gpu_memory_utilization"] = l["gpu_memory_utilization"]
    served = longest_served(o)
    pg = re.fullmatch(r"\s*(\d+) prompt \+ (\d+) generated\s*", str(m.get("seq_len", "")))
    if pg:
        inf["prompt_len"], inf["gen_len"] = int(pg.group(1)), int(pg.group(2))
    elif seq:
        inf["prompt_len"], inf["gen_len"] = seq, 0
    elif served:
        inf["prompt_len"], inf["gen_len"] = served
    bs = stated_int(l.get("max_batch")) or stated_int(l.get("micro_batch"))
    if bs:
        inf["batch"] = bs
    w["inference"] = inf
    return w


def recompute_for(l):
    text = (str(l.get("recompute", "")) + " " + str(l.get("knobs", ""))).lower()
    if "full" in text or "activation checkpointing" in text or "checkpoint-activations" in text:
        return "full"
    if "selective" in text:
        mods = [n for n in ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
                if re.search(r"\b" + n + r"\b", text.split(":", 1)[1])] if ":" in text else []
        return "selective" + (",ac_modules=" + "/".join(mods) if mods else "")
    if re.search(r"\bnone\b|\bno\b", text):
        return "none"
    return None  # not stated: the CLI's default answers


def layout_for(case, task):
    l = case["layout"]
    keys = []
    repo = case.get("source", {}).get("repo")
    if task != "inference" and repo in FRAMEWORKS:
        keys.append(("framework", FRAMEWORKS[repo]))
    for k in ("dp", "tp", "pp", "cp", "ep", "vpp"):
        v = first_int(l.get(k))
        if v is not None and (v > 1 or k in ("dp", "tp", "pp")):
            keys.append((k, v))
    if task == "inference":
        if "offload" in str(l.get("offload", "")).lower():
            keys.append(("offload_params", "cpu"))
        return keys
    z = first_int(l.get("zero_stage"))
    if z is not None:
        keys.append(("zero", z))
    if first_int(l.get("micro_batch")):
        keys.append(("mbs", first_int(l["micro_batch"])))
    ac = recompute_for(l)
    ladder = ladder_recipe(case)
    if ladder:
        ac = ladder["ac"]
    if ac:
        keys.append(("ac", ac))
    sp = str(l.get("sp", "")).lower()
    if sp in ("true", "on", "yes") or sp.startswith("on"):
        keys.append(("sp", "on"))
    elif sp in ("false", "off", "no"):
        keys.append(("sp", "off"))
    if l.get("async_tp") is True:
        keys.append(("tp_overlap", "on"))
    off = str(l.get("offload", "")).lower()
    if off and not off.startswith("none"):
        if "param" in off or "zero-3" in off:
            keys.append(("offload_params", "cpu"))
        keys.append(("offload_optimizer", "nvme" if "nvme" in off else "cpu"))
    elif l.get("optimizer_offload") is True:
        keys.append(("offload_optimizer", "cpu"))
    return keys


def metric_of(o):
    if "weights_per_gpu_gb" in o:
        return "weights", o["weights_per_gpu_gb"] * GIB
    if "kv_cache_tokens" in o:
        return "kv_tokens", o["kv_cache_tokens"]
    if isinstance(o.get("nvidia_smi_used_mib"), list):
        return "device", max(first_int(v) or 0 for v in o["nvidia_smi_used_mib"]) << 20
    if isinstance(o.get("measured_peak_gib"), (int, float)):
        t = str(o.get("memory_metric", "")).lower()
        kind = ("device" if "nvidia-smi" in t else "reserved" if "reserved" in t
                else "allocated" if "active" in t or "allocated" in t else "unspecified")
        return kind, o["measured_peak_gib"] * GIB
    return None, None


def truth_for(case, workload, cluster):
    o = case["outcome"]
    src = case.get("source", {})
    t = {"id": case["id"], "source": src.get("url") or src.get("paper") or src.get("repo"),
         "category": case["category"]}
    fits = o.get("fits")
    if "max_seq_len_fits_hf_fa2" in o:
        fits = first_int(o["max_seq_len_fits_hf_fa2"]) is not None
    if isinstance(fits, bool):
        t["fits"] = fits
    kind, value = metric_of(o)
    if kind:
        t["metric"], t["measured"] = kind, int(round(value))
    tps = o.get("tokens_per_sec_per_gpu")
    if not isinstance(tps, (int, float)) and isinstance(o.get("step_time_s"), (int, float)):
        gpus = cluster["nodes"] * cluster["gpus_per_node"]
        if workload.get("global_batch") and workload.get("seq_len"):
            tps = workload["global_batch"] * workload["seq_len"] / (o["step_time_s"] * gpus)
    if isinstance(tps, (int, float)) and workload["task"] != "inference":
        t["tokens_per_sec_per_gpu"] = tps
    return t


def dump_yaml(obj):
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, width=120)


def main():
    with open(CASES) as f:
        cases = yaml.safe_load(f)["cases"]
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for case in cases:
        d = os.path.join(OUT, case["id"])
        os.makedirs(d)
        cfg, why = config_for(case)
        workload = workload_for(case)
        cluster = cluster_for(case)
        truth = truth_for(case, workload, cluster)
        if cfg is None:
            truth["no_input"] = why
        else:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f, indent=2)
                f.write("\n")
        with open(os.path.join(d, "cluster.yaml"), "w") as f:
            f.write(dump_yaml(cluster))
        with open(os.path.join(d, "workload.yaml"), "w") as f:
            f.write(dump_yaml(workload))
        with open(os.path.join(d, "layout.txt"), "w") as f:
            f.write(",".join(f"{k}={v}" for k, v in layout_for(case, workload["task"])) + "\n")
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
            f.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.relpath(OUT, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
