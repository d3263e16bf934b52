#!/usr/bin/env python3
"""What transformers' and peft's own code keeps for backward, per token per decoder layer,
beside what shardplan prices for it: a check of the activation formulas that needs no GPU.

    saved_activations.py --shardplan BIN [--families llama,qwen3,...] [--autocast-families ...]
                         [--fp32-families ...] [--lora llama:all,llama:q_proj/v_proj,...]
                         [--lora-fp32 ...] [--tolerance 0.015]

Each family is built from a tiny config (2 layers, width 512, 8 query heads and 2 KV heads of
64, FFN 1408, 4 experts top-2 for the MoE ones; OPT: 8 heads, FFN 2048) with random weights,
and one forward and loss run on 3 x 200 tokens with PyTorch's SDPA attention, on the CPU.
Every tensor autograd saves is counted once per storage (saved_tensors_hooks); the second
layer's are divided by its 600 tokens. Five regimes:
  bf16      the model in bf16, as pure-bf16 training or FSDP's bf16 parameters run it;
            shardplan: framework=fsdp,zero=3 (FSDP, model code from transformers);
  autocast  the model in fp32 under bf16 autocast, as one GPU or DDP with fp32 master weights
            runs it; shardplan: framework=fsdp,zero=0 on an fp32 config.json;
  fp32      the model in fp32 without autocast (fp32 training, and torchtitan's tensor or
            pipeline parallelism without FSDP); shardplan: framework=fsdp,zero=3 with
            precision: fp32;
  lora      the bf16 model under peft's LoRA (r 8, adapters in fp32 as peft makes them) and
            bf16 autocast, as HF Trainer runs it; shardplan: framework=hf, task: lora, with
            the same rank and target modules;
  lora-fp32 the same in fp32 without autocast (precision: fp32), where adapters reading one
            tensor share its saved copy.
shardplan prices the same config.json on one GPU, micro-batch 3 of 200 tokens, no
recomputation: its `activations` term over the 2 layers. The casts autocast caches of each
weight are its `autocast_weight_cache` term, not counted here.

The element-wise parts (norms, q/k norms, MLPs, routing) are Python-level ops that save the
same tensors on any device. The attention kernel is the CPU's flash kernel, which keeps what
CUDA's does (q, k, v, the output and an fp32 log-sum-exp per head). Left out, as the CPU and
CUDA differ there: MoE under autocast (the CPU runs the grouped expert GEMMs in fp32, CUDA in
bf16) and Phi-3 (its attention output is copied once more for o_proj on the CPU).

Exit status: 0 when every run is within the tolerance, 1 when one is not, 2 when a family
cannot be built or priced.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BATCH, SEQ = 3, 200
COMMON = dict(vocab_size=1024, hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
              num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
              tie_word_embeddings=False)
MOE = dict(num_experts_per_tok=2)


def make_config(family):
    import transformers as tf
    if family == "llama":
        return tf.LlamaConfig(**COMMON)
    if family == "mistral":
        return tf.MistralConfig(**COMMON)
    if family == "qwen2":
        return tf.Qwen2Config(**COMMON)
    if family == "qwen3":
        return tf.Qwen3Config(**COMMON)
    if family == "gemma":
        return tf.GemmaConfig(**COMMON)
    if family == "gemma3":
        return tf.Gemma3TextConfig(**COMMON, sliding_window=4096)
    if family == "olmo2":
        return tf.Olmo2Config(**COMMON)
    if family == "opt":
        return tf.OPTConfig(vocab_size=1024, hidden_size=512, num_hidden_layers=2, num_attention_heads=8, ffn_dim=2048,
                            max_position_embeddings=1024, word_embed_proj_dim=512, dropout=0.0, attention_dropout=0.0,
                            pad_token_id=1, bos_token_id=2, eos_token_id=2)
    if family == "mixtral":
        return tf.MixtralConfig(**COMMON, num_local_experts=4, **MOE)
    if family == "qwen3_moe":
        return tf.Qwen3MoeConfig(**COMMON, num_experts=4, moe_intermediate_size=704, decoder_sparse_step=1, **MOE)
    if family == "apertus":
        return tf.ApertusConfig(**COMMON)
    if family == "exaone_moe":
        return tf.ExaoneMoeConfig(**COMMON, num_experts=4, num_shared_experts=1, moe_intermediate_size=704,
                                  first_k_dense_replace=0, sliding_window=4096, **MOE)
    raise SystemExit(f"saved_activations.py: unknown family {family!r}")


LORA_RANK = 8


def measure(family, folder, regime, targets=None):
    """Bytes autograd saves per token in the second decoder layer; writes config.json."""
    import torch
    import transformers as tf
    cfg = make_config(family)
    cfg._attn_implementation = "sdpa"
    cfg.torch_dtype = "float32" if regime in ("autocast", "fp32", "lora-fp32") else "bfloat16"
    cfg.save_pretrained(folder)
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(cfg)
    if regime not in ("autocast", "fp32", "lora-fp32"):
        model = model.to(torch.bfloat16)
    base = getattr(model, model.base_model_prefix)
    layers = base.layers if hasattr(base, "layers") else base.decoder.layers  # OPT: model.decoder.layers
    if regime in ("lora", "lora-fp32"):
        import peft
        model = peft.get_peft_model(model, peft.LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules=targets))
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen, where = {}, ["outside"]

    def pack(t):
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in seen and storage.data_ptr() not in params:
            seen[key] = (where[0], storage.nbytes())
        return t

    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(lambda m, a, i=i: where.__setitem__(0, i))
        layer.register_forward_hook(lambda m, a, o: where.__setitem__(0, "outside"))
    ids = torch.randint(0, cfg.vocab_size, (BATCH, SEQ))
    # autocast's cached weight casts have a parameter's shape (or its transpose); activations
    # here never do (600 rows).
    shapes = {tuple(p.shape) for p in model.parameters()} | {tuple(p.shape[::-1]) for p in model.parameters()}

    def pack_activation(t):
        return t if tuple(t.shape) in shapes else pack(t)

    with torch.autograd.graph.saved_tensors_hooks(pack_activation, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=regime not in ("bf16", "fp32", "lora-fp32")):
            model(input_ids=ids, labels=ids)
    return sum(n for w, n in seen.values() if w == 1) / (BATCH * SEQ)


def priced(shardplan, folder, regime, targets=None):
    with open(os.path.join(folder, "cluster.yaml"), "w") as f:
        f.write("name: one\nnodes: 1\ngpus_per_node: 1\ngpu: h100-sxm-80gb\n")
    with open(os.path.join(folder, "workload.yaml"), "w") as f:
        # The CPU's SDPA has a flash kernel for fp32 and GQA; CUDA's does not, so shardplan
        # prices the math path there unless told otherwise (recipe.cc FlashAttention).
        fp32 = "precision: fp32\nflash_attention: true\n"
        if regime in ("lora", "lora-fp32"):
            precision = fp32 if regime == "lora-fp32" else "precision: bf16\n"
            f.write(f"task: lora\n{precision}seq_len: {SEQ}\n"
                    f"lora: {{rank: {LORA_RANK}, targets: [{', '.join(targets)}]}}\n")
        else:
            precision = fp32 if regime == "fp32" else "precision: bf16\n"
            f.write(f"task: pretrain\n{precision}seq_len: {SEQ}\n")
    layout = {"bf16": "framework=fsdp,zero=3", "autocast": "framework=fsdp,zero=0", "fp32": "framework=fsdp,zero=3",
              "lora": "framework=hf", "lora-fp32": "framework=hf"}[regime]
    cmd = [shardplan, "estimate", "--model", os.path.join(folder, "config.json"), "--cluster",
           os.path.join(folder, "cluster.yaml"), "--workload", os.path.join(folder, "workload.yaml"),
           "--layout", f"{layout},dp=1,mbs={BATCH},ac=none", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    terms = json.loads(p.stdout)["memory"]["per_gpu"]["terms"]
    return terms["activations"] / COMMON["num_hidden_layers"] / (BATCH * SEQ)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardplan", required=True)
    ap.add_argument("--families",
                    default="llama,mistral,qwen2,qwen3,gemma,gemma3,olmo2,opt,mixtral,qwen3_moe,exaone_moe,apertus")
    ap.add_argument("--autocast-families", default="llama,qwen3,gemma,gemma3")
    ap.add_argument("--fp32-families", default="llama,qwen3,gemma,olmo2,opt,mixtral")
    ap.add_argument("--lora", default="llama:all,llama:q_proj/v_proj,qwen3:all,gemma:all",
                    help="family:targets, targets / separated or all (the seven projections)")
    ap.add_argument("--lora-fp32", default="llama:all,llama:q_proj/v_proj,qwen3:all",
                    help="the same, with the model and adapters in fp32 and no autocast")
    ap.add_argument("--tolerance", type=float, default=0.015, help="largest |priced / saved - 1| (default 1.5%%)")
    a = ap.parse_args()
    worst, rows = 0.0, []
    seven = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    runs = [(f, "bf16", None) for f in a.families.split(",") if f]
    runs += [(f, "autocast", None) for f in a.autocast_families.split(",") if f]
    runs += [(f, "fp32", None) for f in a.fp32_families.split(",") if f]
    for regime, entries in (("lora", a.lora), ("lora-fp32", a.lora_fp32)):
        for entry in (e for e in entries.split(",") if e):
            family, _, targets = entry.partition(":")
            runs.append((family, regime, seven if targets in ("", "all") else targets.split("/")))
    for family, regime, targets in runs:
        with tempfile.TemporaryDirectory() as folder:
            try:
                saved = measure(family, folder, regime, targets)
                ours = priced(a.shardplan, folder, regime, targets)
            except Exception as e:  # a family this transformers lacks, or a shardplan error
                print(f"saved_activations.py: {family} ({regime}): {e}", file=sys.stderr)
                return 2
        error = ours / saved - 1
        worst = max(worst, abs(error))
        what = regime if not regime.startswith("lora") or targets == seven else regime + " " + "/".join(targets)
        rows.append((family, what, saved, ours, error))
    print(f"{'family':10s} {'regime':26s} {'saved B/token/layer':>20s} {'shardplan':>10s} {'error':>7s}")
    for family, regime, saved, ours, error in rows:
        flag = "" if abs(error) <= a.tolerance else "  <- over the tolerance"
        print(f"{family:10s} {regime:26s} {saved:20.1f} {ours:10.1f} {100 * error:+6.2f}%{flag}")
    print(f"worst |error| {100 * worst:.2f}% (tolerance {100 * a.tolerance:.2f}%)")
    return 0 if worst <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
