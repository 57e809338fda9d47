#!/usr/bin/env python3
"""Golden outputs of transformers' hy_v3 (modeling_hy_v3.HYV3ForCausalLM) for hymt's tiny
hy_v3 checkpoints, in the format tests/parity/parity_test.c reads (make_golden.py's).

Run on a machine with PyTorch and transformers >= 5.8.1 (the GPU machine has 5.17):

    python3 tests/parity/make_golden_hyv3.py tests/data/tiny-hyv3*

On top of make_golden.py's goldens it checks what a parity test cannot see from hymt's side:
  - the checkpoint (released per-expert layout) loads with no missing, unexpected or
    mismatched keys, and every parameter of the loaded model equals the file's tensor
    (transformers renames and fuses the experts at load: gate rows first in gate_up_proj);
    if this transformers cannot read the released layout, the same tensors are written in
    its own (fused) layout to a temporary folder and loaded from there (recorded);
  - the routing margin: over every token of the prompt and of the greedy steps, in every MoE
    layer, the gap between the k-th and (k+1)-th biased score (score + expert bias). hymt
    must choose the same experts; a gap far above float32 rounding (1e-6) makes that sure.
    It also counts the tokens whose choice the bias changed (the test must exercise it).
"""
import json
import os
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import N_GEN, golden_base, greedy, main, max_rel, prompt_ids, write_golden  # noqa: E402


def outer_layout(d, out):
    """The released tensors renamed and fused as transformers' HYV3 modules hold them."""
    t = load_file(os.path.join(d, "model.safetensors"))
    cfg = json.load(open(os.path.join(d, "config.json")))
    res, E = {}, cfg["num_experts"]
    for k, v in t.items():
        if ".mlp.experts." in k:
            continue
        k = k.replace("mlp.router.gate.", "mlp.gate.").replace("mlp.expert_bias", "mlp.e_score_correction_bias")
        res[k.replace("mlp.shared_mlp.", "mlp.shared_experts.")] = v
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}.mlp.experts."
        if p + "0.gate_proj.weight" not in t:
            continue
        res[p + "gate_up_proj"] = torch.stack([torch.cat([t[f"{p}{e}.gate_proj.weight"], t[f"{p}{e}.up_proj.weight"]]) for e in range(E)])
        res[p + "down_proj"] = torch.stack([t[f"{p}{e}.down_proj.weight"] for e in range(E)])
    for f in ("config.json", "generation_config.json"):
        with open(os.path.join(d, f)) as a, open(os.path.join(out, f), "w") as b:
            b.write(a.read())
    save_file(res, os.path.join(out, "model.safetensors"))


def load(d, dtype):
    model, info = AutoModelForCausalLM.from_pretrained(d, dtype=dtype, attn_implementation="eager",
                                                       output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    return model.eval(), bad


def check_params(model, d):
    """The file's tensors (released layout) whose loaded parameter differs, and the count."""
    t = load_file(os.path.join(d, "model.safetensors"))
    sd = model.state_dict()
    n, differ = 0, []
    for k, v in t.items():
        v = v.float()
        if ".mlp.experts." in k:
            pre, rest = k.split(".mlp.experts.")
            e, proj = rest.split(".")[:2]
            e = int(e)
            if proj == "down_proj":
                got = sd[pre + ".mlp.experts.down_proj"][e]
            else:
                gu = sd[pre + ".mlp.experts.gate_up_proj"][e]
                f = gu.shape[0] // 2
                got = gu[:f] if proj == "gate_proj" else gu[f:]
        else:
            k2 = k.replace("mlp.router.gate.", "mlp.gate.").replace("mlp.expert_bias", "mlp.e_score_correction_bias")
            got = sd[k2.replace("mlp.shared_mlp.", "mlp.shared_experts.")]
        if not torch.equal(got.float(), v):
            differ.append(k)
        n += 1
    return n, differ


class RouteProbe:
    """Forward pre-hooks on every HYV3MoE: the margin at the k-th biased score."""

    def __init__(self, model):
        self.min_margin, self.bias_changed, self.tokens = float("inf"), 0, 0
        for m in model.modules():
            if type(m).__name__ == "HYV3MoE":
                m.register_forward_pre_hook(self.hook)

    def hook(self, mod, args):
        h = args[0].reshape(-1, args[0].shape[-1]).float()
        s = torch.sigmoid(torch.nn.functional.linear(h, mod.gate.weight.float()))
        b = s + mod.e_score_correction_bias
        k = mod.top_k
        top = torch.topk(b, k + 1, dim=-1).values
        self.min_margin = min(self.min_margin, float((top[:, k - 1] - top[:, k]).min()))
        plain = torch.topk(s, k, dim=-1).indices.sort(-1).values
        biased = torch.topk(b, k, dim=-1).indices.sort(-1).values
        self.bias_changed += int((plain != biased).any(-1).sum())
        self.tokens += h.shape[0]


def fp64_rel(src, ids, plog):
    """How far float32 is from float64 (a diagnostic only). The experts' default kernel
    (grouped_mm) takes no float64, so the eager loop is asked for; None when neither runs."""
    for kw in ({"experts_implementation": "eager"}, {}):
        try:
            m64 = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float64, attn_implementation="eager", **kw).eval()
            with torch.no_grad():
                return max_rel(plog.double(), m64(torch.tensor([ids])).logits[0])
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            print(f"{src}: float64 run {kw or 'default'} failed: {type(e).__name__}: {e}")
    return None


def make(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    ids = prompt_ids(cfg["vocab_size"], 7)
    src, loaded_from = d, "released per-expert layout"
    model, bad = load(d, torch.float32)
    tmp = None
    if bad:
        print(f"{d}: transformers {transformers.__version__} does not read the released layout "
              f"({bad}); loading its fused layout instead")
        tmp = tempfile.mkdtemp()
        outer_layout(d, tmp)
        src, loaded_from = tmp, "fused layout written from the released tensors"
        model, bad = load(tmp, torch.float32)
        assert not bad, f"{d}: {bad}"
    n_checked, differ = check_params(model, d)
    if differ:
        print(f"{d}: PARAMETERS DIFFER FROM THE FILE: {differ[:20]} ({len(differ)} of {n_checked})")
    probe = RouteProbe(model)
    gen, plog, glog, margins = greedy(model, ids, N_GEN)
    fp64 = fp64_rel(src, ids, plog)
    golden = golden_base(model, cfg["vocab_size"], ids, gen, margins,
                         bool(torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)))
    golden.update({
        "min_route_margin": probe.min_margin,
        "route_tokens": probe.tokens,
        "route_bias_changed_tokens": probe.bias_changed,
        "loaded_from": loaded_from,
        "params_checked_against_file": n_checked,
        "params_differing_from_file": differ,
        "mlp_layer_types": list(model.config.mlp_layer_types),
    })
    write_golden(d, golden, fp64, plog, glog)
    print(f"{d}: {loaded_from}, {n_checked} tensors equal to the file, layers {golden['mlp_layer_types']}, "
          f"rope {getattr(model.config, 'rope_parameters', None)}")
    print(f"{d}: prompt {len(ids)} ids, greedy {gen}, min margin {min(margins):.4f}, "
          f"route margin {probe.min_margin:.2e} over {probe.tokens} token-layers "
          f"({probe.bias_changed} changed by the bias), fp32 vs fp64 {fp64}")


if __name__ == "__main__":
    main(make)
