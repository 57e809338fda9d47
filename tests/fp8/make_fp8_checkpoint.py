#!/usr/bin/env python3
"""A faithful tiny fp8 checkpoint (model doc 6.1, AngelSlim FP8-static / compressed-tensors
layout) made from a tiny bf16 test checkpoint, plus the golden logits of its dequantized
reference, for hymt's parity tests.

Run on the GPU machine (torch 2.11, transformers 5.17, safetensors; no compressed-tensors
package needed), from the repository root:

    python3 tests/fp8/make_fp8_checkpoint.py tests/data/tiny-mqa tests/data/tiny-fp8

It writes OUT (created) with:
  config.json            the source config plus AngelSlim's quantization_config:
                         {quant_method "compressed-tensors", format "naive-quantized",
                         quantization_status "compressed", kv_cache_scheme null,
                         ignored_layers [...], config_groups.group_0 {targets ["Linear"],
                         weights / input_activations {num_bits 8, type "float",
                         strategy "tensor", dynamic false}}}
  hf_quant_config.json   {"quantization": {"exclude_modules": [...],
                         "kv_cache_quant_algo": null, "quant_algo": "FP8"}}
  model.safetensors      every projection but the ignored one as
                         <linear>.weight float8_e4m3fn [out, in],
                         <linear>.weight_scale float32 scalar = max|W| / 448,
                         <linear>.input_scale float32 scalar = max|x| / 448 over the
                         calibration prompt's activations entering that linear;
                         embeddings and norms bf16 as in the source; no lm_head (tied)
  tokenizer files        copied when present
  golden.json, golden_prompt_logits.f32, golden_gen_logits.f32
                         made by tests/parity/make_golden.py on the dequantized reference:
                         the source bf16 checkpoint with each quantized W replaced by
                         bf16(float(W8) * weight_scale) (what a bf16 model holds), run in
                         float32 on the CPU. hymt dequantizes to exactly those bf16 values,
                         so the parity tests (tests/tests.cmake picks up every
                         tests/data/tiny-*/golden.json) hold it to the usual 1e-4.

Quantization, in float32 like hymt's C generator (src/model/load_quant_test.c):
  scale = W.float().abs().amax() / 448
  W8 = (W.float() / scale).clamp(-448, 448).to(torch.float8_e4m3fn)
Then commit OUT (about 200 kB for tiny-mqa).
"""
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
import make_golden  # noqa: E402  (tests/parity/make_golden.py)

PROJS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
IGNORED = ["lm_head", "model.layers.0.mlp.down_proj"]  # one projection stays bf16
FP8_MAX = 448.0


def calibrate(src, ids):
    """max |input| of every projection over the prompt, from the bf16 model in float32."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    amax, hooks = {}, []
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and name != "lm_head":
            def hook(m, args, n=name):
                amax[n] = max(amax.get(n, 0.0), float(args[0].abs().max()))
            hooks.append(mod.register_forward_pre_hook(hook))
    with torch.no_grad():
        model(torch.tensor([ids]))
    for h in hooks:
        h.remove()
    return amax


def main(src, out):
    cfg = json.load(open(os.path.join(src, "config.json")))
    tensors = load_file(os.path.join(src, "model.safetensors"))
    assert cfg.get("tie_word_embeddings") and "lm_head.weight" not in tensors, \
        "expected a tied checkpoint without a stored lm_head (as MT-7B-fp8)"
    ids = make_golden.prompt_ids(cfg["vocab_size"], 7)
    act_amax = calibrate(src, ids)

    fp8, deq = {}, dict(tensors)
    for layer in range(cfg["num_hidden_layers"]):
        for p in PROJS:
            base = f"model.layers.{layer}.{p}"
            w = tensors[base + ".weight"]
            if base in IGNORED:
                fp8[base + ".weight"] = w
                continue
            wf = w.float()
            scale = wf.abs().amax() / FP8_MAX
            w8 = (wf / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
            fp8[base + ".weight"] = w8
            fp8[base + ".weight_scale"] = scale.reshape(())  # float32 scalar
            fp8[base + ".input_scale"] = torch.tensor(act_amax[base] / FP8_MAX,
                                                      dtype=torch.float32)
            deq[base + ".weight"] = (w8.float() * scale).to(torch.bfloat16)
    for k, v in tensors.items():
        fp8.setdefault(k, v)

    os.makedirs(out, exist_ok=True)
    qcfg = dict(cfg)
    qcfg["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "naive-quantized",
        "quantization_status": "compressed",
        "kv_cache_scheme": None,
        "ignored_layers": IGNORED,
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
                        "symmetric": True},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor",
                                  "dynamic": False, "symmetric": True},
        }},
    }
    json.dump(qcfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    json.dump({"quantization": {"exclude_modules": IGNORED, "kv_cache_quant_algo": None,
                                "quant_algo": "FP8"}},
              open(os.path.join(out, "hf_quant_config.json"), "w"), indent=2)
    save_file({k: v.contiguous() for k, v in fp8.items()}, os.path.join(out, "model.safetensors"),
              metadata={"format": "pt"})
    for f in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), out)

    # the dequantized reference: a bf16 checkpoint, goldens by make_golden.py
    with tempfile.TemporaryDirectory() as ref:
        json.dump(cfg, open(os.path.join(ref, "config.json"), "w"), indent=2)
        save_file({k: v.contiguous() for k, v in deq.items()},
                  os.path.join(ref, "model.safetensors"), metadata={"format": "pt"})
        make_golden.make(ref)
        for f in ("golden.json", "golden_prompt_logits.f32", "golden_gen_logits.f32"):
            shutil.copy(os.path.join(ref, f), out)
    n8 = sum(1 for v in fp8.values() if v.dtype == torch.float8_e4m3fn)
    print(f"{out}: {n8} fp8 linears, ignored {IGNORED}; goldens from the dequantized reference")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: make_fp8_checkpoint.py SRC_BF16_DIR OUT_DIR")
    torch.manual_seed(0)
    main(sys.argv[1], sys.argv[2])
