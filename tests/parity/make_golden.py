#!/usr/bin/env python3
"""Golden outputs of Hugging Face transformers for hymt's tiny test checkpoints.

Run on a machine with PyTorch and transformers (the project's GPU machine has 5.17):

    python3 tests/parity/make_golden.py tests/data/tiny-*

For each checkpoint folder it loads AutoModelForCausalLM.from_pretrained(dir,
dtype=torch.float32) with eager attention, on the CPU (exact float32, no TF32), and writes
into the folder:

  golden.json                 prompt ids, 24 greedy ids (no stop on EOS), RoPE inv_freq as
                              transformers computed it, top-1/top-2 margins, versions
  golden_prompt_logits.f32    float32 logits of every prompt position, [T, vocab]
  golden_gen_logits.f32       float32 logits each greedy token was chosen from, [24, vocab];
                              row 0 is the last prompt position

Greedy decoding recomputes the whole sequence each step (no cache), so the goldens do not
depend on transformers' cache code. A float64 run of the same model is compared too, to
show how far float32 itself is from exact (recorded as fp32_vs_fp64_max_rel).
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

N_GEN = 24
PROMPT_LEN = 13


def prompt_ids(vocab, seed):
    # Deterministic ids spread over the whole vocabulary, including specials near the top.
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=PROMPT_LEN).tolist()
    ids[0] = vocab - 15 if vocab < 1024 else vocab - 209  # startoftext-like first token
    return ids


def greedy(model, ids, n):
    seq = list(ids)
    prompt_logits = None
    gen_logits, margins = [], []
    with torch.no_grad():
        for step in range(n):
            out = model(torch.tensor([seq])).logits[0]
            if step == 0:
                prompt_logits = out.clone()
            last = out[-1]
            top2 = torch.topk(last, 2).values
            margins.append(float(top2[0] - top2[1]))
            gen_logits.append(last.clone())
            seq.append(int(torch.argmax(last)))
    return seq[len(ids):], prompt_logits, torch.stack(gen_logits), margins


def max_rel(a, b):
    # max over rows of max|a-b| / max|b|, the same measure the hymt test uses
    num = (a - b).abs().amax(dim=-1)
    den = b.abs().amax(dim=-1)
    return float((num / den).max())


def golden_base(model, vocab, ids, gen, margins, head_tied):
    """The fields every golden.json has first (parity_test.c reads them)."""
    return {
        "prompt": ids,
        "greedy": gen,
        "vocab_size": vocab,
        "inv_freq": model.model.rotary_emb.inv_freq.float().tolist(),
        "rope_attention_scaling": float(getattr(model.model.rotary_emb, "attention_scaling", 1.0)),
        "lm_head_is_embed_tokens": head_tied,
        "min_greedy_margin": min(margins),
        "greedy_margins": margins,
    }


def write_golden(d, golden, fp64_rel, plog, glog):
    """The two logits files and golden.json (the float64 distance and versions last)."""
    plog.numpy().astype("<f4").tofile(os.path.join(d, "golden_prompt_logits.f32"))
    glog.numpy().astype("<f4").tofile(os.path.join(d, "golden_gen_logits.f32"))
    golden.update({
        "fp32_vs_fp64_max_rel": fp64_rel,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "device": "cpu",
        "dtype": "float32",
    })
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)


def main(make):
    """make(d) for every folder of the command line; every failure reported, then exit 1."""
    torch.manual_seed(0)
    failed = 0
    for d in sys.argv[1:]:
        try:
            make(d)
        except Exception as e:  # report every checkpoint, then fail
            failed += 1
            print(f"{d}: FAILED: {type(e).__name__}: {e}")
    sys.exit(1 if failed else 0)


def make(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    ids = prompt_ids(cfg["vocab_size"], 7)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    print(f"{d}: transformers {transformers.__version__} read rope as "
          f"{getattr(model.config, 'rope_parameters', None)}")
    gen, plog, glog, margins = greedy(model, ids, N_GEN)
    head_tied = bool(model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
                     or torch.equal(model.lm_head.weight, model.model.embed_tokens.weight))
    m64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").eval()
    with torch.no_grad():
        p64 = m64(torch.tensor([ids])).logits[0]
    golden = golden_base(model, cfg["vocab_size"], ids, gen, margins, head_tied)
    write_golden(d, golden, max_rel(plog.double(), p64), plog, glog)
    print(f"{d}: prompt {len(ids)} ids, greedy {gen}, min margin {min(margins):.4f}, "
          f"fp32 vs fp64 {golden['fp32_vs_fp64_max_rel']:.2e}, head tied {head_tied}")


if __name__ == "__main__":
    main(make)
