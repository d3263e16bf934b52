#!/usr/bin/env python3
"""Exact parameter counts of every model family shardplan reads, against transformers' own
models: a check of the counting formulas that needs no GPU and downloads nothing.

    param_counts.py --shardplan BIN [--types llama,qwen3,...] [--list]

For every model_type transformers registers a causal-LM (or image-text-to-text) class for,
the config class's defaults are written as a config.json (the way `save_pretrained` writes
them) and the model is built from it on the meta device: its parameters plus its persistent
buffers (what a checkpoint stores, such as DeepSeek-V3's router correction bias), counted
once per tensor, are the truth. `shardplan inspect --json` reads the same config.json; its
params_total must equal the language model's count, and its params_vision the vision
encoder's and projector's, exactly.

A type shardplan does not read is listed as not supported (not a failure); so is a type whose
default config transformers itself cannot build. A type shardplan reads but counts wrongly,
or rejects although it is in its supported list, fails the check, except the defaults listed
in KNOWN_REJECTED with the reason a published config is still read.

Exit status: 0 when every supported family's count is exact, 1 when one is not, 2 when
transformers or torch is missing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

# Class defaults shardplan refuses on purpose; a published config of the family states what
# the default leaves out.
KNOWN_REJECTED = {
    # Glm4MoeConfig has no head_dim attribute and 96 heads do not divide its 4096 width:
    # transformers floors the division (42); GLM-4.5's published configs say head_dim 128.
    "glm4_moe": "head_dim",
}

# Class defaults transformers itself cannot build (a None it then computes with), completed
# with the value the family's published configs state.
BUILDABLE = {
    "ministral": {"head_dim": 128},  # MinistralConfig leaves head_dim None
    # Dots1Config leaves the experts None (dots.llm1: 128 routed, 2 shared, top 6, one dense layer)
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1},
}

# Multimodal checkpoints whose vision encoder shardplan does not count yet: their text tower must
# still be exact, and the encoder's size is printed.
VISION_UNCOUNTED = {"llama4", "kimi_k25"}

VISION = re.compile(r"(^|\.)(vision_tower|vision_model|visual|multi_modal_projector|mm_projector|vision_embed_tokens)\.|(^|\.)image_newline$")


def hf_counts(cfg, model_cls):
    import torch
    with torch.device("meta"):
        model = model_cls.from_config(cfg)
    text = vision = 0
    seen = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        if VISION.search(name):
            vision += p.numel()
        else:
            text += p.numel()
    for mod_name, mod in model.named_modules():
        for b_name, b in mod._buffers.items():
            if b is None or b_name in mod._non_persistent_buffers_set or id(b) in seen:
                continue
            seen.add(id(b))
            full = f"{mod_name}.{b_name}"
            if VISION.search(full):
                vision += b.numel()
            else:
                text += b.numel()
    return text, vision


def families(selected):
    from transformers import AutoConfig
    from transformers.models.auto import modeling_auto as ma
    # The image-text class first: a multimodal checkpoint holds its vision encoder, and that is
    # what loading it builds.
    mappings = [getattr(ma, "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", {}), ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES]
    out = {}
    for mapping, auto in zip(mappings, ["AutoModelForImageTextToText", "AutoModelForCausalLM"]):
        for t in mapping:
            if t not in out and (not selected or t in selected):
                out[t] = auto
    return sorted(out.items()), AutoConfig


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shardplan", required=True)
    ap.add_argument("--types", default="", help="comma-separated model_types (default: all)")
    ap.add_argument("--list", action="store_true", help="print every family's line, not only the supported ones")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    try:
        import transformers
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        print(f"param_counts: {e}: run scripts/python-env", file=sys.stderr)
        return 2
    hf_logging.set_verbosity_error()
    selected = {t for t in args.types.split(",") if t}
    fams, AutoConfig = families(selected)
    exact, wrong, unsupported, unbuildable = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for t, auto in fams:
            try:
                cfg = AutoConfig.for_model(t, **BUILDABLE.get(t, {}))
                # Some composite class defaults contradict themselves (Mistral3Config ties the head
                # at the top, its text_config does not); a published config states one intent, so
                # the top level takes the text tower's.
                text_cfg = getattr(cfg, "text_config", None)
                if text_cfg is not None and hasattr(text_cfg, "tie_word_embeddings"):
                    cfg.tie_word_embeddings = text_cfg.tie_word_embeddings
                text, vision = hf_counts(cfg, getattr(transformers, auto))
            except Exception as e:  # transformers' own default does not build
                unbuildable.append(t)
                if args.list:
                    print(f"  {t:28} transformers cannot build its default config: {str(e).splitlines()[0][:90]}")
                continue
            path = os.path.join(tmp, f"{t}.json")
            with open(path, "w") as f:
                f.write(cfg.to_json_string())
            r = subprocess.run([args.shardplan, "inspect", "--model", path, "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                msg = (r.stderr.strip().splitlines() or [""])[-1]
                if f'unsupported "{t}"' in msg or "does not support" in msg:
                    unsupported.append(t)
                    if args.list:
                        print(f"  {t:28} not read by shardplan")
                elif KNOWN_REJECTED.get(t, "\0") in msg:
                    unbuildable.append(t)
                    print(f"  {t:28} default config refused as expected ({KNOWN_REJECTED[t]})")
                else:
                    wrong.append(t)
                    print(f"  {t:28} FAIL: shardplan exit {r.returncode}: {msg[:160]}")
                continue
            j = json.loads(r.stdout)
            ours_text, ours_vision = j["params_total"], j.get("params_vision", 0)
            if ours_text == text and ours_vision == vision:
                exact.append(t)
                print(f"  {t:28} {text:>18,} {vision:>14,}  exact")
            elif ours_text == text and ours_vision == 0 and t in VISION_UNCOUNTED:
                exact.append(t)
                print(f"  {t:28} {text:>18,} {0:>14,}  text exact; vision encoder of {vision:,} not counted")
            else:
                wrong.append(t)
                print(f"  {t:28} FAIL: transformers {text:,} + vision {vision:,}; "
                      f"shardplan {ours_text:,} ({(ours_text - text) / text:+.4%}) + vision {ours_vision:,}")
    total = len(fams)
    print(f"\ntransformers {transformers.__version__}: {total} causal-LM / image-text families; "
          f"shardplan reads {len(exact) + len(wrong)}: {len(exact)} exact, {len(wrong)} wrong; "
          f"{len(unsupported)} not read; {len(unbuildable)} whose default transformers cannot build or shardplan refuses on purpose")
    if unsupported and not args.list:
        print("not read: " + ", ".join(unsupported))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
