#!/usr/bin/env python3
"""Measures one rank of a training layout on one GPU, from the inputs shardplan reads.

    calibrate.py RUN... [--out DIR] [--device cuda|cpu] [--steps N] [--json] [--check]

Each RUN is a folder in bench/user_inputs' format (config.json, cluster.yaml, workload.yaml,
layout.txt). The script builds the model from config.json with random weights (nothing is
downloaded), shards it the way the layout says, runs N training steps (3 by default) on
random tokens, and writes DIR/<run>/ with the four inputs and a truth.json that score.py reads:
max_memory_allocated as the scored figure, with max_memory_reserved and the device's used
memory beside it, the versions and the GPU.

An N-GPU layout is measured on one GPU as rank 0 of torch's fake process group of world size
dp x tp. FSDP2 (fully_shard) and DTensor tensor parallelism shard for real, so parameters,
gradients, optimizer states, gathered layers, activations and logits have their per-rank
sizes; the collectives return uninitialised buffers of the right size instead of moving
data. What that leaves out is listed in every record (LEFT_OUT).

What it runs, per framework (the layout's `framework=`):
- torchtitan: fully_shard per decoder layer and on the root (from `release: 2025-07-28` the
  embeddings and [norm, output] as units of their own); a Llama runs torchtitan's own block
  (torchtitan_code) at any TP degree, other models transformers'; fp32 parameters with bf16
  compute and fp32 gradient reduction (MixedPrecisionPolicy), or pure bf16 with
  `master_weights: none`; tensor parallelism with sequence parallelism (torchtitan always
  shards the sequence) and the loss on vocabulary-sharded logits (loss_parallel); the caching
  allocator with expandable segments, as torchtitan's run_train.sh sets it.
- torchtune: fully_shard per decoder layer and on the root, all in the workload's dtype
  (torchtune has no fp32 master copy); LoRA adapters in that dtype too. The embeddings and the
  head are units of their own where `custom_sharded_layers` names them, or, unstated, where
  torchtune's configs do (full fine-tunes of the Llama 3 family).
- hf: one GPU (dp = tp = 1), a plain training loop: the model in fp32 under bf16 autocast
  (`master_weights: fp32`, HF Trainer's mixed precision) or in the workload's dtype; under
  LoRA the frozen base in the workload's dtype and the adapters in fp32 (peft's
  autocast_adapter_dtype), under the same autocast. QLoRA (`task: qlora`) is the same with
  every decoder Linear a bitsandbytes NF4 Linear4bit (block 64, double-quantized scales, bf16
  compute), each wrapped as peft's LoRA Linear4bit wraps it; with `kbit_prepare` (true unless
  stated) what TRL's SFTTrainer does first: peft's prepare_model_for_kbit_training casts every
  16-bit parameter to fp32, then TRL casts the embeddings and head back to bf16.
Recomputation: `ac=full` wraps every decoder layer in a non-reentrant checkpoint;
`ac=selective` is torchtitan's per-op policy (keep every other matmul's output, attention's
outputs and reduce-scatters). The loss is the standard one, cross-entropy on fp32-upcast
logits (`loss: standard`), or torchtune's chunked one (`loss: chunked`, 8 chunks).

Decoder models in the llama layout of transformers (model.model.embed_tokens, .layers, .norm,
.rotary_emb and lm_head: llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, ...) are
supported; anything else, and pipeline, context or expert parallelism, exit 2 naming why.
Needs torch and transformers (and PyYAML, which transformers brings); QLoRA and the 8-bit and
paged optimizers (adamw-8bit, paged-adamw, paged-adamw-8bit) need bitsandbytes, and the paged
ones a CUDA device.
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import types

import yaml

INPUTS = ("config.json", "cluster.yaml", "workload.yaml", "layout.txt")
OPTIMIZERS = ("adamw", "adam", "sgd", "sgd-momentum", "adamw-8bit", "paged-adamw", "paged-adamw-8bit")

# Terms a one-GPU rehearsal under the fake process group cannot show, by what replaces them.
LEFT_OUT = [
    "nccl_buffers: the fake process group opens no NCCL communicator, so NCCL's own device "
    "buffers and its CUDA context growth are absent",
    "collective scratch: a collective returns an uninitialised output of its size; NCCL's "
    "internal staging buffers are not allocated",
    "other ranks' imbalance: the measured rank is rank 0 of every group (the first pipeline "
    "stage when there is one; pipeline parallelism is not run)",
]

# torchtitan's per-op selective checkpointing (torchtitan/models/llama3/infra/parallelize.py
# _save_list): these ops' outputs are kept, and of the matmuls every second one is recomputed.
SAC_KEEP = (
    "aten.mm.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default",
    "_c10d_functional.reduce_scatter_tensor.default",
    "aten.max.default",
)


# torchtitan 83e694105 (2025-07-28, models/llama3/infra/parallelize.py apply_fsdp): the token
# embeddings become an FSDP unit of their own and [norm, output] one; before, per-block units
# and the root, the last block not resharded after forward. A workload's `release:` picks.
TORCHTITAN_EMBEDDING_UNIT = 20250728

# The caching allocator's setting torchtitan's launcher exports.
EXPANDABLE = "expandable_segments:True"

LLAMA_LINEARS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class RunError(Exception):
    """A run this harness cannot reproduce; the message says which input and why."""


def read_layout(path):
    text = open(path).read().strip()
    out = {}
    for item in text.split(","):
        if not item:
            continue
        if "=" not in item:
            raise RunError(f"{path}: expected key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def read_yaml(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict):
        raise RunError(f"{path}: expected a mapping")
    return doc


def release_of(folder, w):
    """workload.yaml's `release:` (2025-08, 2025-08-01 or 20250801) as yyyymmdd, 0 unstated."""
    v = w.get("release")
    if v is None:
        return 0
    digits = str(v).replace("-", "")
    if not digits.isdigit() or len(digits) not in (6, 8):
        raise RunError(f"{folder}/workload.yaml: release {v!r}: expected a date such as 2025-08-01")
    return int(digits.ljust(8, "0")) if len(digits) == 8 else int(digits) * 100


def as_int(folder, layout, key, default):
    v = layout.get(key)
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        raise RunError(f"{folder}/layout.txt: {key}: expected an integer, got {v!r}") from None


class Run:
    """A run folder's inputs, checked against what this harness reproduces."""

    def __init__(self, folder):
        self.folder = folder
        self.id = os.path.basename(os.path.normpath(folder))
        for name in INPUTS:
            if not os.path.isfile(os.path.join(folder, name)):
                raise RunError(f"{folder}: missing {name}")
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        self.workload = read_yaml(os.path.join(folder, "workload.yaml"))
        read_yaml(os.path.join(folder, "cluster.yaml"))  # checked only: a record names the GPU it ran on
        self.layout = read_layout(os.path.join(folder, "layout.txt"))
        lay, w = self.layout, self.workload
        self.framework = lay.get("framework", "hf")
        if self.framework not in ("torchtitan", "torchtune", "hf"):
            raise RunError(f"{folder}/layout.txt: framework {self.framework!r}: the harness runs torchtitan, "
                           "torchtune or hf layouts")
        for key in ("pp", "cp", "ep", "etp", "vpp"):
            if as_int(folder, lay, key, 1) != 1:
                raise RunError(f"{folder}/layout.txt: {key}={lay[key]}: the harness runs data and tensor "
                               "parallelism only")
        if lay.get("offload_optimizer", "none") != "none" or lay.get("offload_params", "none") != "none":
            raise RunError(f"{folder}/layout.txt: offload is not rehearsed by the harness")
        self.dp = as_int(folder, lay, "dp", 1)
        self.tp = as_int(folder, lay, "tp", 1)
        self.mbs = as_int(folder, lay, "mbs", 1)
        self.grad_accum = as_int(folder, lay, "grad_accum", 1)
        self.zero = as_int(folder, lay, "zero", 3 if self.dp > 1 else 0)
        self.ac = lay.get("ac", "none")
        if self.ac not in ("none", "full", "selective"):
            raise RunError(f"{folder}/layout.txt: ac={self.ac}: expected none, full or selective")
        if self.framework == "hf" and (self.dp != 1 or self.tp != 1):
            raise RunError(f"{folder}/layout.txt: framework hf runs on one GPU (dp=1, tp=1)")
        if self.framework == "torchtune" and self.tp != 1:
            raise RunError(f"{folder}/layout.txt: torchtune layouts run with tp=1 here")
        self.task = w.get("task", "pretrain")
        if self.task not in ("pretrain", "finetune", "lora", "qlora", "inference"):
            raise RunError(f"{folder}/workload.yaml: task {self.task!r}: expected pretrain, finetune, lora, qlora or "
                           "inference")
        if self.task == "qlora" and self.framework != "hf":
            raise RunError(f"{folder}/layout.txt: QLoRA runs as framework=hf on one GPU here")
        self.kbit = self.task == "qlora" and str(w.get("kbit_prepare", "true")).lower() in ("true", "on", "yes")
        self.release = release_of(folder, w)
        if self.task == "inference":
            self.read_serving(folder, w)
            return
        self.seq = int(w.get("seq_len", 2048))
        self.precision = w.get("precision", "bf16")
        if self.precision not in ("bf16", "fp32"):
            raise RunError(f"{folder}/workload.yaml: precision {self.precision!r}: expected bf16 or fp32")
        default_master = "none" if self.framework == "torchtune" else "fp32"
        self.master = str(w.get("master_weights", default_master))
        if self.framework == "torchtune" and self.master != "none":
            raise RunError(f"{folder}/workload.yaml: torchtune keeps no fp32 master copy (master_weights: none)")
        # adamw_torch (HF Trainer's name) is torch's foreach AdamW, the only AdamW step run here.
        named = w.get("optimizer", "adamw")
        self.optimizer = "adamw" if named == "adamw_torch" else named
        if self.optimizer not in OPTIMIZERS:
            raise RunError(f"{folder}/workload.yaml: optimizer {self.optimizer!r}: expected adamw_torch or one of "
                           f"{', '.join(OPTIMIZERS)}")
        self.loss = w.get("loss", "standard")
        if self.loss not in ("standard", "chunked"):
            raise RunError(f"{folder}/workload.yaml: loss {self.loss!r}: expected standard or chunked")
        if self.loss == "chunked" and self.tp > 1:
            raise RunError(f"{folder}/workload.yaml: loss chunked with tp > 1 is not rehearsed")
        for key in ("compile", "activation_offload", "optimizer_in_backward"):
            if str(w.get(key, "false")).lower() in ("true", "on", "yes"):
                raise RunError(f"{folder}/workload.yaml: {key} is not rehearsed by the harness")
        if self.task in ("lora", "qlora") and self.tp != 1:
            raise RunError(f"{folder}/layout.txt: LoRA runs with tp=1 here")
        self.custom_sharded = self.read_custom_sharded(folder, w)
        lora = w.get("lora") or {}
        adapters = self.task in ("lora", "qlora")
        self.lora_rank = int(lora.get("rank", 8)) if adapters else 0
        # shardplan's default targets: every linear of the layer under llama's seven names.
        self.lora_targets = list(lora.get("targets", LLAMA_LINEARS)) if adapters else []

    def read_custom_sharded(self, folder, w):
        """torchtune's custom_sharded_layers: as stated, or what its full fine-tune configs for the
        Llama 3 family set (untied vocabularies of 128,256 tokens), as shardplan assumes."""
        stated = w.get("custom_sharded_layers")
        if self.framework != "torchtune":
            if stated:
                raise RunError(f"{folder}/workload.yaml: custom_sharded_layers is torchtune's; this layout runs "
                               f"{self.framework}")
            return []
        if stated is None:
            cfg = self.config
            llama3 = (cfg.get("model_type") == "llama" and int(cfg.get("vocab_size", 0)) >= 128000
                      and not cfg.get("tie_word_embeddings", False))
            stated = ["tok_embeddings", "output"] if llama3 and self.task in ("pretrain", "finetune") else []
        if not isinstance(stated, list) or any(n not in ("tok_embeddings", "output") for n in stated):
            raise RunError(f"{folder}/workload.yaml: custom_sharded_layers {stated!r}: expected a list of "
                           "tok_embeddings and output")
        return list(stated)

    def read_serving(self, folder, w):
        """Serving is transformers' generate on one GPU: a batch of prompts, greedy decoding of
        gen_len tokens into the default (dynamic) KV cache."""
        if self.framework != "hf" or self.dp != 1 or self.tp != 1:
            raise RunError(f"{folder}/layout.txt: inference runs as framework=hf on one GPU (dp=1, tp=1)")
        inf = w.get("inference") or {}
        if str(inf.get("engine", "")).lower() not in ("transformers", "hf"):
            raise RunError(f"{folder}/workload.yaml: inference.engine: the harness serves with transformers' "
                           "generate (engine: transformers)")
        try:
            self.batch, self.prompt, self.gen = int(inf["batch"]), int(inf["prompt_len"]), int(inf.get("gen_len", 0))
        except (KeyError, TypeError, ValueError):
            raise RunError(f"{folder}/workload.yaml: inference: expected integer batch and prompt_len") from None
        self.weights = str(inf.get("weights", w.get("precision", "bf16")))
        if self.weights not in ("bf16", "fp16"):
            raise RunError(f"{folder}/workload.yaml: inference.weights {self.weights!r}: the harness serves bf16 or "
                           "fp16 weights")
        if str(inf.get("kv_cache", self.weights)) != self.weights:
            raise RunError(f"{folder}/workload.yaml: inference.kv_cache: transformers keeps the cache in the "
                           "weights' dtype")
        self.precision, self.master, self.lora_rank, self.lora_targets = self.weights, "none", 0, []
        self.mbs, self.grad_accum, self.zero, self.ac, self.seq = self.batch, 1, 0, "none", self.prompt + self.gen


# ---- Building the model ----

def build_model(run, torch, device):
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = dict(run.config)
    model_type = cfg.pop("model_type", None)
    if not model_type:
        raise RunError(f"{run.folder}/config.json: no model_type")
    cfg.pop("quantization_config", None)
    config = AutoConfig.for_model(model_type, **cfg)
    config.use_cache = False
    if run.tp > 1 and getattr(config, "tie_word_embeddings", False):
        # Sharding the embedding by rows and the head by columns would untie them.
        raise RunError(f"{run.folder}/config.json: tied embeddings under tp > 1 are not rehearsed")
    # A LoRA run's base is frozen: it loads in the workload's precision (transformers 5 loads
    # the checkpoint's dtype unless told otherwise) and only the adapters train in fp32.
    master_fp32 = run.master == "fp32" and run.task not in ("lora", "qlora")
    store = torch.float32 if (run.precision == "fp32" or master_fp32) else torch.bfloat16
    if run.task == "inference":
        store = torch.float16 if run.weights == "fp16" else torch.bfloat16
    extra = {"experts_implementation": EXPERTS} if EXPERTS and is_moe(cfg) else {}
    with torch.device("meta"):
        try:
            model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=store, **extra)
        except TypeError:  # transformers before 4.56 names it torch_dtype
            model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", torch_dtype=store,
                                                     **extra)
    inner = getattr(model, "model", None)
    for part in ("embed_tokens", "layers", "norm", "rotary_emb"):
        if inner is None or not hasattr(inner, part):
            raise RunError(f"{run.folder}/config.json: model_type {model_type!r} is not in the llama layout "
                           "(model.embed_tokens, layers, norm, rotary_emb) the harness drives")
    if run.lora_rank:
        add_lora(run, model, torch, torch.float32 if run.framework == "hf" else None)
    return model, config


def is_moe(cfg):
    return any(cfg.get(k) for k in ("num_experts", "num_local_experts", "n_routed_experts"))


def runs_torchtitan_code(run):
    """torchtitan's own Llama 3 block stands in for transformers' where the harness can put it:
    a dense llama model_type, at any TP degree. Under TP the block's norms take the sequence-
    sharded DTensors that SequenceParallel hands them, as torchtitan's nn.RMSNorm does, and its
    attention the local heads of the column-parallel projections."""
    return (run.framework == "torchtitan" and run.config.get("model_type") == "llama"
            and run.task != "inference" and not run.lora_rank)


def runs_torchtitan_moe(run):
    """With CALIBRATE_MOE=torchtitan, torchtitan's MoE layer stands in for transformers' sparse
    block in a torchtitan-labelled qwen3_moe run; attention, norms and the rest stay
    transformers'. Off by default: on an H100 it allocated what transformers' grouped_mm path
    does, and its steps ran 2-9% slower over strided halves of transformers' fused
    gate_up_proj, and from 13% faster to 16% slower with w1 and w3 apart, as torchtitan holds
    them (see README.md)."""
    return (MOE_CODE == "torchtitan" and run.framework == "torchtitan"
            and run.config.get("model_type") == "qwen3_moe"
            and run.task != "inference" and not run.lora_rank and run.tp == 1)


def torchtitan_moe_forward(torch, top_k, norm_topk):
    """The forward of torchtitan's MoE layer without expert parallelism (torchtitan b5bcd76c6,
    models/common/moe.py MoE, TokenChoiceTopKRouter, GroupedExperts and token_dispatcher.py
    LocalTokenDispatcher), over a transformers sparse block's own weights: the router's
    logits in fp32, softmax, top-k unsorted, the scores renormalised where the config says;
    the routed copies sorted by expert with a stable argsort and gathered; w1 and w3 as two
    grouped GEMMs (transformers fuses them into one gate_up_proj, whose halves they are), w2
    as a third; the scores applied in fp32 to the expert outputs; and a deterministic
    scatter_add back to the tokens, whose backward is a gather. The experts hold w1, w3 and
    w2 (transformers' down_proj) as three parameters (split_gate_up)."""
    F = torch.nn.functional

    def forward(self, hidden_states):
        b, s, d = hidden_states.shape
        x = hidden_states.reshape(-1, d)
        logits = F.linear(x.float(), self.gate.weight.float())  # torchtitan: under autocast to fp32
        scores = F.softmax(logits, dim=-1)
        _, expert_ids = torch.topk(scores, k=top_k, dim=-1, sorted=False)
        top = scores.gather(dim=-1, index=expert_ids)
        if norm_topk:
            top = top / (top.sum(dim=-1, keepdim=True) + 1e-20)
        per_expert = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, expert_ids, True).sum(dim=0)
        order = torch.argsort(expert_ids.view(-1), stable=True)
        top_sorted = top.view(-1)[order]
        token = order // top_k
        routed = x[token]
        offsets = torch.cumsum(per_expert, dim=0, dtype=torch.int32)
        experts = self.experts
        h = F.silu(torch._grouped_mm(routed.bfloat16(), experts.w1.bfloat16().transpose(-2, -1), offs=offsets))
        h = h * torch._grouped_mm(routed.bfloat16(), experts.w3.bfloat16().transpose(-2, -1), offs=offsets)
        out = torch._grouped_mm(h, experts.down_proj.bfloat16().transpose(-2, -1), offs=offsets).type_as(x)
        out = (out.to(torch.float32) * top_sorted.reshape(-1, 1)).to(out.dtype)
        was = torch.are_deterministic_algorithms_enabled()
        warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
        torch.use_deterministic_algorithms(True, warn_only=False)
        try:
            y = torch.zeros_like(x).scatter_add(0, token.reshape(-1, 1).expand(-1, d), out)
        finally:
            torch.use_deterministic_algorithms(was, warn_only=warn_only)
        return y.reshape(b, s, d)
    return forward


def split_gate_up(experts, torch):
    """transformers' fused gate_up_proj (experts x 2 ffn x dim, w1's rows then w3's) becomes
    torchtitan's two parameters, w1 and w3, each contiguous, with the same values (on the meta
    device, before FSDP, only their shapes)."""
    gate_up = experts.gate_up_proj
    ffn = gate_up.shape[1] // 2
    with torch.no_grad():
        experts.w1 = torch.nn.Parameter(gate_up[:, :ffn].clone(), requires_grad=gate_up.requires_grad)
        experts.w3 = torch.nn.Parameter(gate_up[:, ffn:].clone(), requires_grad=gate_up.requires_grad)
    del experts.gate_up_proj


def torchtitan_moe(run, model, config, torch):
    forward = torchtitan_moe_forward(torch, config.num_experts_per_tok, bool(getattr(config, "norm_topk_prob", False)))
    for layer in model.model.layers:
        mlp = layer.mlp
        experts, gate = getattr(mlp, "experts", None), getattr(mlp, "gate", None)
        if experts is None:
            continue  # a dense layer (mlp_only_layers, decoder_sparse_step)
        if not (hasattr(experts, "gate_up_proj") and hasattr(experts, "down_proj") and hasattr(gate, "weight")):
            raise RunError(f"{run.folder}: this transformers' qwen3_moe block has no gate_up_proj, down_proj "
                           "and router weight for torchtitan's MoE to run on")
        split_gate_up(experts, torch)
        mlp.forward = types.MethodType(forward, mlp)


def torchtitan_code(model, config, device, torch):
    """Gives every decoder layer the computation of torchtitan's Llama 3 block (torchtitan
    83e694105, models/llama3/model/model.py and models/attention.py), on transformers' own
    modules and weights, so that autograd saves what torchtitan's code saves: nn.RMSNorm's
    fused rms_norm in the input's dtype (transformers upcasts to fp32 and keeps both), rotary
    embeddings as fp32 complex products, K and V repeated to every head before SDPA with the
    flash, memory-efficient and math kernels in that order, and the same gated MLP."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = float(getattr(config, "rope_theta", 10000.0))
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].float() / head_dim))
    table = {}

    def freqs_cis(seqlen):
        if seqlen not in table:
            angles = torch.outer(torch.arange(seqlen, device=device, dtype=torch.float32), freqs)
            table[seqlen] = torch.polar(torch.ones_like(angles), angles)
        return table[seqlen]

    def rotary(x, f):
        x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_ * f.view(1, x.shape[1], 1, x_.shape[-1])).flatten(3).type_as(x)

    def repeat(x, n):
        if n == 1:
            return x
        bs, slen, heads, dim = x.shape
        return x.unsqueeze(3).expand(bs, slen, heads, n, dim).reshape(bs, slen, heads * n, dim)

    def attention(self, hidden_states, **kw):
        bs, seqlen, _ = hidden_states.shape
        xq = self.q_proj(hidden_states).view(bs, seqlen, -1, head_dim)
        xk = self.k_proj(hidden_states).view(bs, seqlen, -1, head_dim)
        xv = self.v_proj(hidden_states).view(bs, seqlen, -1, head_dim)
        f = freqs_cis(seqlen)
        xq, xk = rotary(xq, f), rotary(xk, f)
        n = xq.shape[2] // xk.shape[2]
        keys, values = repeat(xk, n), repeat(xv, n)
        with sdpa_kernel(backends, set_priority=True):
            out = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                                 is_causal=True)
        return self.o_proj(out.transpose(1, 2).contiguous().view(bs, seqlen, -1)), None

    def rms_norm(self, x):
        return F.rms_norm(x, self.weight.shape, self.weight, self.variance_epsilon)

    for layer in model.model.layers:
        layer.self_attn.forward = types.MethodType(attention, layer.self_attn)
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.forward = types.MethodType(rms_norm, norm)
    model.model.norm.forward = types.MethodType(rms_norm, model.model.norm)


# lora_alpha / r. The value moves no byte; peft's default (alpha 8 over rank 8) is 1, common
# recipes set alpha to twice the rank.
LORA_SCALING = 2.0


def add_lora(run, model, torch, adapter_dtype):
    """Freezes the base and puts rank-r A and B beside every targeted Linear, as peft does:
    in fp32 for hf (peft's autocast_adapter_dtype), in the model's dtype for torchtune."""
    nn = torch.nn

    class LoraLinear(nn.Module):
        def __init__(self, base, r, dtype):
            super().__init__()
            self.base = base
            dtype = dtype or base.weight.dtype
            self.lora_a = nn.Linear(base.in_features, r, bias=False, dtype=dtype, device=base.weight.device)
            self.lora_b = nn.Linear(r, base.out_features, bias=False, dtype=dtype, device=base.weight.device)

        def forward(self, x):
            return self.base(x) + self.lora_b(self.lora_a(x.to(self.lora_a.weight.dtype))).to(x.dtype)

    class QLoraLinear(LoraLinear):
        """peft's LoRA Linear4bit forward (peft/tuners/lora/bnb.py, 0.21): the base's output
        cloned ("defensively", for 4-bit), the adapters' output scaled and added; under autocast
        x goes to the adapters as it is. The base is a bitsandbytes Linear4bit, which computes
        in bf16 and returns its input's dtype."""

        def forward(self, x):
            result = self.base(x).clone()
            if torch.is_autocast_enabled():
                return result + self.lora_b(self.lora_a(x)) * LORA_SCALING
            out = self.lora_b(self.lora_a(x.to(self.lora_a.weight.dtype))) * LORA_SCALING
            return result + out.to(result.dtype)

    wrapper = QLoraLinear if run.task == "qlora" else LoraLinear
    for p in model.parameters():
        p.requires_grad_(False)
    hits = 0
    for layer in model.model.layers:
        for name, module in list(layer.named_modules()):
            leaf = name.rsplit(".", 1)[-1]
            if isinstance(module, nn.Linear) and ("all-linear" in run.lora_targets or leaf in run.lora_targets):
                parent = layer.get_submodule(name.rsplit(".", 1)[0]) if "." in name else layer
                setattr(parent, leaf, wrapper(module, run.lora_rank, adapter_dtype))
                hits += 1
    if hits == 0:
        raise RunError(f"{run.folder}/workload.yaml: lora.targets {run.lora_targets} match no Linear of the model")


def apply_tp(run, model, mesh, torch):
    try:
        from torch.distributed.tensor import Replicate, Shard
    except ImportError:  # torch before 2.5
        from torch.distributed._tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    parallelize_module(model.model, mesh, {
        "embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
    })
    parallelize_module(model, mesh, {
        "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
    })
    for layer in model.model.layers:
        plan = {
            "input_layernorm": SequenceParallel(),
            "post_attention_layernorm": SequenceParallel(),
            "self_attn": PrepareModuleInput(input_kwarg_layouts={"hidden_states": Shard(1)},
                                            desired_input_kwarg_layouts={"hidden_states": Replicate()}),
            "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(output_layouts=Shard(1)),
        }
        mlp = layer.mlp
        if all(hasattr(mlp, n) for n in ("gate_proj", "up_proj", "down_proj")):
            plan.update({"mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                         "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                         "mlp.down_proj": RowwiseParallel(output_layouts=Shard(1))})
        else:
            raise RunError(f"{run.folder}: tensor parallelism is rehearsed for gated dense MLPs only")
        parallelize_module(layer, mesh, plan)
        attn = layer.self_attn
        for attr in ("num_heads", "num_key_value_heads"):
            if hasattr(attn, attr):
                setattr(attn, attr, getattr(attn, attr) // run.tp)


def wrap_checkpoint(run, model, torch):
    if run.ac == "none":
        return
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    kwargs = {"preserve_rng_state": False}
    if run.ac == "selective":
        from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
        keep = {op for op in (_op(torch, name) for name in SAC_KEEP) if op is not None}
        mm = torch.ops.aten.mm.default

        def context_fn():
            meta = {"forward": 0, "recompute": 0}

            def policy(ctx, func, *args, **kw):
                mode = "recompute" if ctx.is_recompute else "forward"
                if func == mm:
                    meta[mode] += 1
                if func in keep and not (func == mm and meta[mode] % 2 == 0):
                    return CheckpointPolicy.MUST_SAVE
                return CheckpointPolicy.PREFER_RECOMPUTE
            return create_selective_checkpoint_contexts(policy)
        kwargs["context_fn"] = context_fn
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], **kwargs)


def _op(torch, name):
    """torch.ops.<name>, or None where this torch build lacks it."""
    op = torch.ops
    try:
        for part in name.split("."):
            op = getattr(op, part)
        return op
    except (AttributeError, RuntimeError):
        return None


def apply_fsdp(run, model, mesh, torch):
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # torch before 2.6 kept FSDP2 under _composable
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    kw = {"mesh": mesh, "reshard_after_forward": run.zero >= 3}
    if run.master == "fp32" and run.precision == "bf16":
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    layers = model.model.layers
    if run.framework == "torchtitan" and run.release >= TORCHTITAN_EMBEDDING_UNIT:
        if getattr(model.config, "tie_word_embeddings", False):
            raise RunError(f"{run.folder}: torchtitan's later wrapping of tied embeddings is not rehearsed")
        # From 2025-07-28 the embeddings are a unit of their own, resharded after forward like
        # every block, and [norm, output] one kept gathered for backward.
        fully_shard(model.model.embed_tokens, **kw)
        for layer in layers:
            fully_shard(layer, **kw)
        fully_shard([model.model.norm, model.lm_head], **{**kw, "reshard_after_forward": False})
        fully_shard(model, **kw)
        return
    if run.custom_sharded:
        # torchtune's shard_model: every layer and each custom_sharded_layers module a unit of
        # its own, all resharded after forward, then the root.
        for layer in layers:
            fully_shard(layer, **kw)
        if "tok_embeddings" in run.custom_sharded:
            fully_shard(model.model.embed_tokens, **kw)
        if "output" in run.custom_sharded:
            fully_shard(model.lm_head, **kw)
        fully_shard(model, **kw)
        return
    for i, layer in enumerate(layers):
        # torchtitan keeps the last block unsharded after forward: backward needs it at once.
        fully_shard(layer, **{**kw, "reshard_after_forward": kw["reshard_after_forward"] and i < len(layers) - 1})
    fully_shard(model, **kw)


def quantized_bases(run, model, torch):
    """QLoRA: every Linear of the decoder layers (the one each adapter wraps, and those no
    adapter targets), taken out of the module tree before the model is materialized, so that
    no bf16 copy of the base is made whole on the device; quantize_bases puts each back as NF4.
    Returns (parent, name, Linear) triples."""
    if run.task != "qlora":
        return []
    taken = []
    for layer in model.model.layers:
        for parent in list(layer.modules()):
            for name, child in list(parent.named_children()):
                wrapped = type(parent).__name__ == "QLoraLinear" and name == "base"
                if type(child) is torch.nn.Linear and (wrapped or type(parent).__name__ != "QLoraLinear"):
                    taken.append((parent, name, child))
    for parent, name, _ in taken:
        parent._modules[name] = None
    return taken


def quantize_bases(taken, device, torch):
    """Each taken Linear as a bitsandbytes Linear4bit, quantized from a random bf16 weight one
    at a time, as transformers' loader quantizes a checkpoint's tensors: NF4 in blocks of 64
    with double-quantized scales (bnb_4bit_use_double_quant, as QLoRA's recipes set it), bf16
    compute, uint8 storage."""
    if not taken:
        return
    try:
        import bitsandbytes as bnb
    except ImportError:
        raise RunError("task qlora needs bitsandbytes, which is not installed") from None
    for parent, name, linear in taken:
        biased = linear.bias is not None
        q = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=biased, compute_dtype=torch.bfloat16,
                              compress_statistics=True, quant_type="nf4", quant_storage=torch.uint8, device="meta")
        if biased:  # Qwen2's q, k and v: a bias in the checkpoint's dtype beside the 4-bit weight
            q.bias = torch.nn.Parameter(torch.zeros(linear.out_features, dtype=torch.bfloat16, device=device),
                                        requires_grad=False)
        w = torch.empty(linear.out_features, linear.in_features, dtype=torch.bfloat16, device=device)
        w.normal_(0.0, 0.02)
        q.weight = bnb.nn.Params4bit(w, requires_grad=False, compress_statistics=True, quant_type="nf4",
                                     blocksize=64, quant_storage=torch.uint8, module=q).to(device)
        del w
        setattr(parent, name, q)


def prepare_kbit(run, model, device, torch):
    """What TRL's SFTTrainer does to a 4-bit model before training: peft's
    prepare_model_for_kbit_training casts every fp16/bf16 parameter but the 4-bit blocks to fp32
    and empties the allocator's cache (peft/utils/other.py, 0.21); for a bf16 run TRL's
    peft_module_casting_to_bf16 then casts the embeddings and head back, and leaves the norms
    fp32."""
    for p in model.parameters():
        if p.dtype in (torch.float16, torch.bfloat16) and type(p).__name__ != "Params4bit":
            p.data = p.data.to(torch.float32)
    if run.precision == "bf16":
        for mod in {id(m): m for m in (model.model.embed_tokens, model.lm_head)}.values():
            mod.to(torch.bfloat16)
    if device.type == "cuda":
        torch.cuda.empty_cache()


def parameter_count(p):
    """Elements of a parameter as the model defines it: a 4-bit weight's, not its packed bytes'."""
    state = getattr(p, "quant_state", None)
    if state is not None and getattr(state, "shape", None) is not None:
        n = 1
        for d in state.shape:
            n *= d
        return n
    return (p.to_local() if hasattr(p, "to_local") else p).numel()


def materialize(model, device, torch):
    # to_empty gives every module its own new tensor, which unties a head shared with the
    # embedding unless FSDP holds them as one parameter: remember who shared what, and share
    # it again after. The sharers are emptied first, so that no second copy is allocated and
    # freed on the device (a loaded checkpoint has none; its freed block would stay cached).
    shared = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        shared.setdefault(id(p), []).append(name)
    for names in shared.values():
        for other in names[1:]:
            mod, attr = other.rsplit(".", 1)
            model.get_submodule(mod)._parameters[attr] = None
    model.to_empty(device=device)
    for names in shared.values():
        owner, attr = names[0].rsplit(".", 1)
        first = getattr(model.get_submodule(owner), attr)
        for other in names[1:]:
            mod, attr = other.rsplit(".", 1)
            setattr(model.get_submodule(mod), attr, first)
    with torch.no_grad():
        for p in model.parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            local.normal_(0.0, 0.02)
    # to_empty left the rotary frequencies undefined: build that module again on the device.
    rot = model.model.rotary_emb
    model.model.rotary_emb = type(rot)(config=rot.config).to(device)


def make_optimizer(run, model, torch):
    params = [p for p in model.parameters() if p.requires_grad]
    if run.optimizer in ("adamw", "adam"):
        cls = torch.optim.AdamW if run.optimizer == "adamw" else torch.optim.Adam
        return cls(params, lr=1e-5, betas=(0.9, 0.95), weight_decay=0.1 if run.optimizer == "adamw" else 0,
                   foreach=True)
    if run.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-5, foreach=True)
    if run.optimizer == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9, foreach=True)
    try:
        import bitsandbytes as bnb
    except ImportError:
        raise RunError(f"{run.folder}/workload.yaml: optimizer {run.optimizer} needs bitsandbytes, which is not "
                       "installed") from None
    # The paged ones keep their states in CUDA unified memory, which the driver evicts to the
    # host when the device runs short (bitsandbytes' PagedAdamW, PagedAdamW8bit).
    cls = {"adamw-8bit": bnb.optim.AdamW8bit, "paged-adamw": bnb.optim.PagedAdamW,
           "paged-adamw-8bit": bnb.optim.PagedAdamW8bit}[run.optimizer]
    return cls(params, lr=1e-5)


# ---- One training step ----

def decoder_forward(run):
    """The forward the step calls through model(...), so that FSDP's root hooks gather the
    embedding, final norm and head: the logits, or torchtune's eight sequence chunks of them."""
    def forward(self, ids, positions):
        inner = self.model
        h = inner.embed_tokens(ids)
        cos_sin = inner.rotary_emb(h, positions)
        for layer in inner.layers:
            out = layer(h, position_embeddings=cos_sin, attention_mask=None, position_ids=positions)
            h = out[0] if isinstance(out, tuple) else out
        h = inner.norm(h)
        if run.loss == "chunked":
            return [self.lm_head(c) for c in h.chunk(8, dim=1)]
        return self.lm_head(h)
    return forward


def loss_of(run, logits, labels, torch):
    F = torch.nn.functional
    if run.loss == "chunked":  # torchtune CEWithChunkedOutputLoss: upcast and score chunk by chunk
        total = 0
        for c, y in zip(logits, labels.chunk(len(logits), dim=1)):
            total = total + F.cross_entropy(c.float().flatten(0, 1), y.flatten(), reduction="sum")
        return total / labels.numel()
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def forward_backward(run, model, vocab, device, torch, mark=lambda phase: None):
    ids = torch.randint(0, vocab, (run.mbs, run.seq), device=device)
    positions = torch.arange(run.seq, device=device).unsqueeze(0).expand(run.mbs, -1)
    autocast = (torch.autocast(device_type=device.type, dtype=torch.bfloat16)
                if run.framework == "hf" and run.master == "fp32" and run.precision == "bf16"
                else contextlib.nullcontext())
    parallel_loss = contextlib.nullcontext()
    if run.tp > 1:  # the head's output stays vocabulary-sharded (torchtitan's loss_parallel)
        from torch.distributed.tensor.parallel import loss_parallel
        parallel_loss = loss_parallel()
    with autocast:
        logits = model(ids, positions)
    mark("forward")
    with parallel_loss:
        loss = loss_of(run, logits, ids, torch)
        # The training loops free the logits before backward: torchtitan and torchtune
        # `del` them, HF Trainer's compute_loss returns the loss alone. Autograd kept what
        # the loss's backward needs.
        del logits
        mark("loss")
        loss.backward()
    mark("backward")


def measure(run, device_name, steps):
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    device = torch.device(device_name)
    cuda = device.type == "cuda"
    if cuda:
        if run.framework == "torchtitan":
            # torchtitan's launcher (run_train.sh) sets PYTORCH_ALLOC_CONF=expandable_segments:True,
            # so its reserved memory is the allocator's with expandable segments.
            torch.cuda.memory._set_allocator_settings(EXPANDABLE)
        torch.cuda.set_device(0)
        torch.zeros(1, device=device)  # the CUDA context, before anything of the run
        if LIVE_AT or TRACE_EVENTS:  # diagnostics: where the allocator's blocks came from
            torch.cuda.memory._record_memory_history(max_entries=2_000_000)
        free0, total = torch.cuda.mem_get_info()
        context_bytes = total - free0
        torch.cuda.reset_peak_memory_stats()
    perturb = perturbation() if cuda else None
    held = None
    if perturb:
        held = torch.empty(perturb[1], dtype=torch.uint8, device=device)
        if perturb[0] == "hole":
            del held
            held = None
    world = run.dp * run.tp
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=max(1, world))
    try:
        model, config = build_model(run, torch, device)
        if run.task != "inference":
            model.forward = types.MethodType(decoder_forward(run), model)
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh(device.type, (run.dp, run.tp), mesh_dim_names=("dp", "tp")) if world > 1 else None
        if run.tp > 1:
            apply_tp(run, model, mesh["tp"], torch)
        model_code = "transformers"
        if runs_torchtitan_code(run):
            torchtitan_code(model, config, device, torch)
            model_code = "torchtitan"
        elif runs_torchtitan_moe(run):
            torchtitan_moe(run, model, config, torch)
            model_code = "transformers, torchtitan's MoE layer"
        wrap_checkpoint(run, model, torch)
        if run.dp > 1:
            apply_fsdp(run, model, mesh["dp"], torch)
        fits, oom_at, local_params, generate_trace, profile = True, None, None, None, None
        started = time.time()
        phase = "setup"
        # Where each phase ends: the bytes still allocated and the peak so far (never reset, so
        # the run's peak is untouched), for the first step and the last.
        # The last step of several also says when each phase ended, after a synchronize, in
        # seconds from the step's start: forward, loss and backward apart for the time model.
        phases = []
        step_seconds = []
        step_started = time.time()

        def mark(name):
            if cuda and (name == "setup" or phase in ("generate", "step 1", f"step {steps}")):
                at = {"at": "setup" if name == "setup" else f"{phase} {name}",
                      "allocated": torch.cuda.memory_allocated(),
                      "peak_so_far": torch.cuda.max_memory_allocated()}
                if steps > 1 and phase == f"step {steps}":
                    torch.cuda.synchronize()
                    at["seconds"] = round(time.time() - step_started, 4)
                phases.append(at)
                if LIVE_AT and at["at"] == LIVE_AT:
                    live_blocks.extend(live_blocks_now(torch))
        live_blocks = []
        try:
            taken = quantized_bases(run, model, torch)
            materialize(model, device, torch)
            quantize_bases(taken, device, torch)
            if run.kbit:
                prepare_kbit(run, model, device, torch)
            local_params = sum(parameter_count(p) for p in model.parameters())
            mark("setup")
            if run.task == "inference":
                phase = "generate"
                generate_trace = serve(run, model, config, device, torch)
                mark("done")
                steps = 1
            else:
                optimizer = make_optimizer(run, model, torch)
                model.train()
            for step in range(steps if run.task != "inference" else 0):
                phase = f"step {step + 1}"
                if cuda:
                    torch.cuda.synchronize()
                step_started = time.time()
                profiling = PROFILE and step == steps - 1
                profiler = torch.profiler.profile() if profiling else contextlib.nullcontext()
                with profiler:
                    for _ in range(run.grad_accum):
                        forward_backward(run, model, config.vocab_size, device, torch, mark)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    mark("step")
                if profiling:
                    profile = kernel_table(profiler, cuda)
                if cuda:
                    torch.cuda.synchronize()
                # This rank's compute alone: the fake process group moves no data.
                step_seconds.append(round(time.time() - step_started, 4))
        except getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError) as e:
            fits, oom_at = False, f"{phase}: {str(e).splitlines()[0]}"
        seconds = time.time() - started
        record = {"fits": fits, "local_params": local_params, "steps": steps, "seconds": round(seconds, 3),
                  "model_code": model_code}
        if is_moe(run.config) and not runs_torchtitan_moe(run):
            # How transformers ran the routed experts: 'eager' (a Python loop over the experts
            # that got tokens) or 'grouped_mm' (one grouped GEMM per projection).
            record["experts_implementation"] = getattr(config, "_experts_implementation", None)
        if run.dp > 1:  # fully_shard turns each unit's class into FSDP<Class>
            record["fsdp_units"] = sum(1 for mod in model.modules() if type(mod).__name__.startswith("FSDP"))
        if step_seconds:
            record["step_seconds"] = step_seconds
        if oom_at:
            record["oom"] = oom_at
        if phases:
            record["phases"] = phases
        if generate_trace:
            record["generate_trace"] = generate_trace
        if live_blocks:
            record["live_blocks"] = live_blocks
        if profile:
            record["profile_last_step"] = profile
        if cuda and TRACE_EVENTS:
            record["allocator_events"] = allocator_events(torch)
        if cuda and run.framework == "torchtitan":
            # What the allocator did, not only what it was asked: a segment it mapped expandably.
            record["allocator"] = EXPANDABLE
            try:
                record["expandable_segments_seen"] = any(
                    seg.get("is_expandable", False) for seg in torch.cuda.memory_snapshot())
            except (RuntimeError, AttributeError, TypeError):
                record["expandable_segments_seen"] = None
        if cuda:
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            props = torch.cuda.get_device_properties(0)
            taken = held.numel() if held is not None else 0
            if perturb:
                record["perturbation"] = {"kind": perturb[0], "bytes": perturb[1]}
            record.update({
                "allocated_peak_bytes": torch.cuda.max_memory_allocated() - taken,
                "reserved_peak_bytes": torch.cuda.max_memory_reserved() - taken,
                "device_used_bytes": total - free - taken,
                "cuda_context_bytes": context_bytes,
                "gpu": props.name, "gpu_total_bytes": total,
                "cuda": torch.version.cuda, "driver": _driver(),
            })
            # How the reserve came about: the allocator's own counters at the end of the run.
            stats = torch.cuda.memory_stats()
            record["allocator_stats"] = {k: stats.get(k) for k in (
                "segment.all.peak", "segment.large_pool.peak", "inactive_split_bytes.all.peak",
                "inactive_split_bytes.large_pool.peak", "num_alloc_retries", "num_device_alloc",
                "num_device_free", "requested_bytes.all.peak") if k in stats}
        record["torch"] = torch.__version__
        import transformers
        record["transformers"] = transformers.__version__
        return record
    finally:
        dist.destroy_process_group()


# Diagnostics, off unless set: CALIBRATE_LIVE_AT="step 1 forward" (a phase mark) lists the
# blocks of 64 MiB and more alive at that mark with the Python frames that allocated them;
# CALIBRATE_TRACE_EVENTS=1 keeps the allocator's whole event trace ([action, bytes, address,
# stream], in order; segments mapped and unmapped too, where they are expandable),
# which a model of the caching allocator can be replayed against.
# CALIBRATE_PERTURB=hole:BYTES or hold:BYTES shifts the allocator's layout before the model is
# built: a block of BYTES allocated and freed at once (a cached hole the run's first blocks
# fill), or held through the run (its bytes are taken off the peaks recorded). The same run
# under a few of them shows how far its reserved peak moves when nothing it needs changes.
# CALIBRATE_EXPERTS=eager|grouped_mm|batched_mm picks transformers' routed-expert code for an
# MoE model (its default where unset; the record says which ran). CALIBRATE_MOE=torchtitan
# runs torchtitan's MoE layer instead, where runs_torchtitan_moe says it can.
LIVE_AT = os.environ.get("CALIBRATE_LIVE_AT", "")
EXPERTS = os.environ.get("CALIBRATE_EXPERTS", "")
MOE_CODE = os.environ.get("CALIBRATE_MOE", "")
TRACE_EVENTS = os.environ.get("CALIBRATE_TRACE_EVENTS", "") == "1"
PERTURB = os.environ.get("CALIBRATE_PERTURB", "")
# CALIBRATE_PROFILE=1 profiles the last step (torch.profiler) and keeps its operators' device
# times in the record (profile_last_step); that step's own time is then slowed by the profiler.
PROFILE = os.environ.get("CALIBRATE_PROFILE", "") == "1"


def kernel_table(profiler, cuda, rows=40):
    """The last step's operators by their device time (self time, so that a kernel counts
    once), from torch.profiler: name, calls and microseconds, the longest first."""
    attrs = ("self_device_time_total", "self_cuda_time_total", "self_cpu_time_total") if cuda else ("self_cpu_time_total",)

    def own(e):
        return next((v for v in (getattr(e, a, None) for a in attrs) if v is not None), 0)
    table = sorted(((e.key, e.count, round(own(e))) for e in profiler.key_averages()), key=lambda r: -r[2])
    return {"total_us": sum(r[2] for r in table), "ops": [list(r) for r in table[:rows] if r[2] > 0]}


def perturbation():
    """(kind, bytes) from CALIBRATE_PERTURB, or None."""
    if not PERTURB:
        return None
    kind, _, size = PERTURB.partition(":")
    if kind not in ("hole", "hold") or not size.isdigit():
        raise SystemExit(f"CALIBRATE_PERTURB={PERTURB!r}: expected hole:BYTES or hold:BYTES")
    return kind, int(size)


def live_blocks_now(torch):
    out = []
    for seg in torch.cuda.memory._snapshot()["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "active_allocated" and b["size"] >= 64 << 20:
                frames = [f"{os.path.basename(f['filename'])}:{f['line']} {f['name']}" for f in b.get("frames", [])
                          if f["filename"].endswith(".py") and ("torch/" not in f["filename"] or "fsdp" in f["filename"])][:8]
                out.append({"bytes": b["size"], "frames": frames})
    return sorted(out, key=lambda b: -b["bytes"])


def allocator_events(torch):
    keep = {"alloc": "a", "free_completed": "f", "segment_alloc": "S", "segment_free": "F", "oom": "o",
            "segment_map": "M", "segment_unmap": "U"}
    events = []
    for dev in torch.cuda.memory._snapshot()["device_traces"]:
        for e in dev:
            if e["action"] in keep:
                # An out-of-memory event names no block (its address is absent).
                events.append([keep[e["action"]], e["size"], e.get("addr", 0), e.get("stream", 0)])
    return events


def _driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def stamp_torch(path, version):
    """Says in workload.yaml which PyTorch ran it, as MAJOR.MINOR (2.11.0+cu130 -> "2.11")."""
    major_minor = ".".join(version.split("+")[0].split(".")[:2])
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if not l.startswith("torch:")]
    lines.append(f'torch: "{major_minor}"')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_record(run, record, out_dir):
    dest = os.path.join(out_dir, run.id)
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name in INPUTS:
        shutil.copy(os.path.join(run.folder, name), tmp)
    if "gpu" in record:  # the cluster it ran as: world size dp x tp on the GPU measured
        world = run.dp * run.tp
        cluster = {"name": run.id, "nodes": max(1, -(-world // 8)), "gpus_per_node": min(world, 8),
                   "gpu": {"name": record["gpu"], "memory": f"{record['gpu_total_bytes'] // (1 << 20)} MiB"}}
        with open(os.path.join(tmp, "cluster.yaml"), "w") as f:
            yaml.safe_dump(cluster, f, sort_keys=False)
    if record.get("torch"):  # the PyTorch it ran on: FSDP2's root behaves by version
        stamp_torch(os.path.join(tmp, "workload.yaml"), record["torch"])
    truth = {
        "id": run.id,
        "source": "bench/calibrate/calibrate.py, rank 0 under torch's fake process group of world size "
                  f"{run.dp * run.tp}, {record.get('gpu', 'cpu')}",
        "category": "calibration",
        "fits": record["fits"],
        "metric": "allocated",
        "measured": record.get("allocated_peak_bytes"),
        "measured_reserved": record.get("reserved_peak_bytes"),
        "measured_device": record.get("device_used_bytes"),
        "record": record,
        "left_out": LEFT_OUT,
    }
    with open(os.path.join(tmp, "truth.json"), "w") as f:
        json.dump(truth, f, indent=2)
        f.write("\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def serve(run, model, config, device, torch):
    """Greedy generation; returns the allocator's figures as each token is chosen (after the
    prefill's forward, then every 16th token and the last): [tokens in the cache, allocated,
    reserved, peak allocated so far, peak reserved so far], how the reserve grows as the cache does."""
    model.eval()
    ids = torch.randint(0, config.vocab_size, (run.batch, run.prompt), device=device)
    trace = []
    cuda = device.type == "cuda"

    class Trace:  # a logits processor: generate calls it once per token, after the forward
        def __call__(self, input_ids, scores):
            n = input_ids.shape[1] - run.prompt
            if cuda and (n % 16 == 0 or n == run.gen - 1):
                trace.append([int(input_ids.shape[1]), torch.cuda.memory_allocated(), torch.cuda.memory_reserved(),
                              torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()])
            return scores
    from transformers import LogitsProcessorList
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(1, run.gen),
                             min_new_tokens=max(1, run.gen), do_sample=False, use_cache=True,
                             pad_token_id=0, eos_token_id=None, logits_processor=LogitsProcessorList([Trace()]))
    if out.shape[1] != run.prompt + max(1, run.gen):
        raise RunError(f"{run.folder}: generate returned {out.shape[1]} tokens, expected {run.prompt + run.gen}")
    return trace


def measure_in_child(folder, args):
    """One run in its own process: a fresh CUDA context and allocator for every run, and an
    out-of-memory abort, a crash or a hang ends that run only."""
    cmd = [sys.executable, os.path.abspath(__file__), folder, "--one", "--device", args.device,
           "--steps", str(args.steps)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"{folder}: no result within --timeout {args.timeout:g} s") from None
    if p.returncode == 2:
        raise RunError(p.stderr.strip().splitlines()[-1].removeprefix("calibrate: "))
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise RunError(f"{folder}: the run exited {p.returncode}: {tail}")
    return json.loads(lines[-1])


def preload(runs):
    """Imports what every run needs once, in this process, without touching the GPU, so that
    each forked child starts with torch, transformers and the models' code already loaded (a
    fresh interpreter pays several seconds for them on every run)."""
    import torch  # noqa: F401: loaded for the children
    import torch.distributed.fsdp  # noqa: F401
    import torch.distributed.tensor.parallel  # noqa: F401
    import torch.utils.checkpoint  # noqa: F401
    from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM
    for run in runs:
        with contextlib.suppress(Exception):  # a run that cannot load says so in its own child
            AutoModelForCausalLM._model_mapping[type(AutoConfig.for_model(run.config["model_type"]))]


def measure_forked(folder, args):
    """One run in a child forked from this process after preload(): its own CUDA context and
    allocator (the parent never touches the GPU), and an abort, a crash or a hang ends that
    run only."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)

    def child():
        try:
            writer.send(("ok", measure(Run(folder), args.device, args.steps)))
        except RunError as e:
            writer.send(("refused", str(e)))
        except BaseException as e:  # noqa: BLE001: reported to the parent, which goes on
            writer.send(("error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
        finally:
            writer.close()
            os._exit(0)

    proc = ctx.Process(target=child)
    proc.start()
    writer.close()
    try:
        if not reader.poll(args.timeout):
            proc.kill()
            raise RunError(f"{folder}: no result within --timeout {args.timeout:g} s")
        try:
            kind, value = reader.recv()
        except EOFError:
            proc.join(10)
            raise RunError(f"{folder}: the run exited {proc.exitcode} without a result") from None
    finally:
        reader.close()
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    if kind != "ok":
        raise RunError(value if kind == "refused" else f"{folder}: {value}")
    return value


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run folders (config.json, cluster.yaml, workload.yaml, layout.txt)")
    ap.add_argument("--out", help="write DIR/<run>/ with the inputs and truth.json")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    ap.add_argument("--json", action="store_true", help="print each record as JSON")
    ap.add_argument("--check", action="store_true", help="only read and check the inputs; run nothing")
    ap.add_argument("--fork", action="store_true",
                    help="fork each run from this process after importing torch and transformers once "
                         "(saves their import per run) rather than start a fresh python3")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the child of measure_in_child
    args = ap.parse_args(argv)
    if args.one:
        try:
            print(json.dumps(measure(Run(args.runs[0]), args.device, args.steps)))
            return 0
        except RunError as e:
            print(f"calibrate: {e}", file=sys.stderr)
            return 2
    status = 0
    if args.fork and not args.check:
        loaded = []
        for folder in args.runs:
            with contextlib.suppress(RunError):
                loaded.append(Run(folder))
        preload(loaded)
    for i, folder in enumerate(args.runs):
        started = time.time()
        try:
            run = Run(folder)
            if args.check:
                continue
            record = measure_forked(folder, args) if args.fork else measure_in_child(folder, args)
        except RunError as e:
            print(f"calibrate: {e}", file=sys.stderr)
            status = 2
            continue
        where = write_record(run, record, args.out) if args.out else None
        if args.json:
            print(json.dumps({"id": run.id, **record}), flush=True)
        else:
            gib = 1 << 30
            mem = (f"allocated {record['allocated_peak_bytes'] / gib:.2f} GiB, reserved "
                   f"{record['reserved_peak_bytes'] / gib:.2f} GiB, device {record['device_used_bytes'] / gib:.2f} GiB"
                   if "allocated_peak_bytes" in record else "no CUDA memory counters on cpu")
            print(f"[{i + 1}/{len(args.runs)}] {run.id}: {'ran' if record['fits'] else 'OOM'}, {mem}, "
                  f"{record['local_params']:,} local params, {time.time() - started:.1f} s"
                  + (f" -> {where}" if where else ""), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
