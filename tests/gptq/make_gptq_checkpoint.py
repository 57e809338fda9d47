#!/usr/bin/env python3
"""A tiny GPTQ-Int4 checkpoint (model doc 6.2: AngelSlim GPTQQuantLinear, the AutoGPTQ v1
layout) made from a tiny bf16 test checkpoint, plus the golden logits of its dequantized
reference, to cross-check hymt's GPTQ loader (src/model/load_gptq.c) against PyTorch.

Run on the GPU machine (torch 2.11 and safetensors; no auto-gptq needed; transformers for
the goldens), from the repository root:

    python3 tests/gptq/make_gptq_checkpoint.py tests/data/tiny-mqa tests/data/tiny-gptq
    python3 tests/gptq/make_gptq_checkpoint.py --asym --desc-act --group-size 64 \
        tests/data/tiny-mqa tests/data/tiny-gptq-asym

Options: --group-size N (default 32; -1 for one group; must divide every projection's
in-features: tiny-mqa has 64 and 128), --asym (default symmetric: zero 8), --desc-act
(a fixed random act-order permutation, g_idx stored), --v2 (checkpoint_format gptq_v2:
zeros stored as is), --bf16-scales (default fp16), --seed N.

It writes OUT (created) with:
  config.json            the source config plus quantization_config {quant_method "gptq",
                         bits 4, group_size, desc_act, sym, checkpoint_format "gptq"|"gptq_v2"}
                         (and quantize_config.json with the same fields, as AutoGPTQ writes)
  model.safetensors      every projection as
                         <linear>.qweight int32 [in/8, out]: input row 8r+j in bits 4j..4j+3
                           of row r,
                         <linear>.qzeros int32 [G, out/8]: output column 8c+j in bits 4j..4j+3
                           of column c, storing (zero - 1) & 15 (v1) or zero (v2),
                         <linear>.scales float16 (or bfloat16) [G, out],
                         <linear>.g_idx int32 [in] (i // group_size, or the act order);
                         embeddings and norms as in the source; no lm_head (tied)
  tokenizer files        copied when present
  golden.json, golden_prompt_logits.f32, golden_gen_logits.f32
                         made by tests/parity/make_golden.py on the dequantized reference:
                         the source checkpoint with each W replaced by
                         bf16(scale * (q - zero)) computed in float32. hymt dequantizes to
                         exactly those bf16 values, so the parity tests (tests/tests.cmake
                         picks up every tests/data/tiny-*/golden.json) hold it to the usual
                         1e-4, and any layout disagreement (nibble order, zero offset, g_idx)
                         shows up as a gross failure.

Quantization (float32, as AutoGPTQ's quantizer and hymt's C generator in
src/model/load_gptq_test.c), per group g (the input rows with g_idx == g) and output column o:
  asym: lo = min(min x, 0), hi = max(max x, 0), s = (hi - lo) / 15, zero = round(-lo / s)
  sym:  m = max(-lo, hi), s = 2 m / 15, zero = 8
  s = 1 where it is 0; s is then rounded to the stored dtype; q = clamp(round(x / s) + zero, 0, 15)
The packing is checked by unpacking it again before anything is written.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))

PROJS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def to_i32(v):
    """int64 values in [0, 2^32) as the int32 with the same bits."""
    return torch.where(v >= 2 ** 31, v - 2 ** 32, v).to(torch.int32)


def pack_rows(q):
    """[8n, m] nibbles -> int32 [n, m]: row 8r+j in bits 4j..4j+3 of row r."""
    n8, m = q.shape
    q = q.to(torch.int64).reshape(n8 // 8, 8, m)
    v = torch.zeros(n8 // 8, m, dtype=torch.int64)
    for j in range(8):
        v |= q[:, j, :] << (4 * j)
    return to_i32(v)


def unpack_rows(p):
    v = p.to(torch.int64) & 0xFFFFFFFF
    return torch.stack([(v >> (4 * j)) & 15 for j in range(8)], 1).reshape(-1, p.shape[1])


def quantize(w, gs, sym, desc_act, v2, scale_dtype, gen):
    """w: [out, in] -> (tensors dict for one linear, dequantized bf16 [out, in])."""
    out_f, in_f = w.shape
    gs = in_f if gs < 0 else gs
    assert in_f % gs == 0 and out_f % 8 == 0, (w.shape, gs)
    n_groups = in_f // gs
    wf = w.float()
    if desc_act:
        perm = torch.randperm(in_f, generator=gen)
        g_idx = torch.empty(in_f, dtype=torch.int64)
        g_idx[perm] = torch.arange(in_f) // gs
    else:
        g_idx = torch.arange(in_f) // gs
    q = torch.empty(in_f, out_f, dtype=torch.int64)
    scales = torch.empty(n_groups, out_f)
    zeros = torch.empty(n_groups, out_f, dtype=torch.int64)
    for g in range(n_groups):
        rows = (g_idx == g).nonzero().flatten()
        x = wf[:, rows]  # [out, rows]
        lo = torch.clamp(x.amin(1), max=0.0)
        hi = torch.clamp(x.amax(1), min=0.0)
        if sym:
            s = 2 * torch.maximum(-lo, hi) / 15
            z = torch.full((out_f,), 8, dtype=torch.int64)
        else:
            s = (hi - lo) / 15
            z = torch.round(-lo / torch.where(s > 0, s, torch.ones_like(s))).to(torch.int64)
        s = torch.where(s == 0, torch.ones_like(s), s).to(scale_dtype).float()
        scales[g] = s
        zeros[g] = z
        q[rows, :] = torch.clamp(torch.round(x / s[:, None]).to(torch.int64) + z[:, None],
                                 0, 15).t()
    qweight = pack_rows(q)
    stored = zeros if v2 else (zeros - 1) & 15
    qzeros = pack_rows(stored.t().contiguous()).t().contiguous()  # packed along out
    # the packing read back, the way hymt reads it
    assert torch.equal(unpack_rows(qweight), q)
    back = unpack_rows(qzeros.t().contiguous()).t()
    assert torch.equal(back if v2 else (back + 1) & 15, zeros)
    s_rows, z_rows = scales[g_idx], zeros[g_idx]  # [in, out]
    deq = (s_rows * (q - z_rows).float()).t().contiguous().to(torch.bfloat16)
    return {"qweight": qweight, "qzeros": qzeros, "scales": scales.to(scale_dtype),
            "g_idx": g_idx.to(torch.int32)}, deq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--group-size", type=int, default=32)
    ap.add_argument("--asym", action="store_true")
    ap.add_argument("--desc-act", action="store_true")
    ap.add_argument("--v2", action="store_true")
    ap.add_argument("--bf16-scales", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(a.seed)
    cfg = json.load(open(os.path.join(a.src, "config.json")))
    tensors = load_file(os.path.join(a.src, "model.safetensors"))
    assert cfg.get("tie_word_embeddings") and "lm_head.weight" not in tensors, \
        "expected a tied checkpoint without a stored lm_head"
    sdt = torch.bfloat16 if a.bf16_scales else torch.float16
    out, deq = {}, dict(tensors)
    for layer in range(cfg["num_hidden_layers"]):
        for p in PROJS:
            base = f"model.layers.{layer}.{p}"
            t, d = quantize(tensors.pop(base + ".weight"), a.group_size, not a.asym, a.desc_act,
                            a.v2, sdt, gen)
            for k, v in t.items():
                out[f"{base}.{k}"] = v
            deq[base + ".weight"] = d
    out.update(tensors)

    qc = {"quant_method": "gptq", "bits": 4, "group_size": a.group_size,
          "desc_act": a.desc_act, "sym": not a.asym,
          "checkpoint_format": "gptq_v2" if a.v2 else "gptq"}
    os.makedirs(a.out, exist_ok=True)
    qcfg = dict(cfg)
    qcfg["quantization_config"] = qc
    json.dump(qcfg, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    json.dump(qc, open(os.path.join(a.out, "quantize_config.json"), "w"), indent=2)
    save_file({k: v.contiguous() for k, v in out.items()},
              os.path.join(a.out, "model.safetensors"), metadata={"format": "pt"})
    for f in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(a.src, f)):
            shutil.copy(os.path.join(a.src, f), a.out)

    import make_golden  # tests/parity/make_golden.py (needs transformers)
    with tempfile.TemporaryDirectory() as ref:
        json.dump(cfg, open(os.path.join(ref, "config.json"), "w"), indent=2)
        save_file({k: v.contiguous() for k, v in deq.items()},
                  os.path.join(ref, "model.safetensors"), metadata={"format": "pt"})
        make_golden.make(ref)
        for f in ("golden.json", "golden_prompt_logits.f32", "golden_gen_logits.f32"):
            shutil.copy(os.path.join(ref, f), a.out)
    print(f"{a.out}: {7 * cfg['num_hidden_layers']} GPTQ linears ({qc}); goldens from the "
          f"dequantized reference")


if __name__ == "__main__":
    main()
