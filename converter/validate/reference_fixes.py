"""Corrections of transformers bugs a reference would otherwise carry into every comparison,
applied to a loaded model (torch loads only here and in reference.py).

NLLB-MoE: transformers 5.24's NllbMoeExperts one-hot-encodes its router's 0/1 first-pick mask
as if it held expert ids, so expert_1 runs at each token's first weight and expert_0 at its
second whichever experts the router picked. Its router is left as it is; the experts it
picked run, each weighted by the router's combined weight (zero for the others and for the
picks capacity dropped), as fairseq and transformers 4 computed them."""

from __future__ import annotations

from types import MethodType


def corrected(model):
    """`model` with the known bugs of its modules fixed in place."""
    for module in model.modules():
        if type(module).__name__ == "NllbMoeExperts":
            module.forward = MethodType(_picked_experts, module)
    return model


def _picked_experts(self, hidden_states, top_1_mask, router_probs):
    import torch

    out = torch.zeros_like(hidden_states)
    for index in range(self.num_experts):
        weight = router_probs[:, index]
        tokens = weight.nonzero().squeeze(-1)
        if tokens.numel():
            expert = self[f"expert_{index}"](hidden_states[tokens]) * weight[tokens, None]
            out.index_add_(0, tokens, expert.to(out.dtype))
    if self.moe_token_dropout > 0:
        out = self.token_dropout(out) if self.training else out * (1 - self.moe_token_dropout)
    return out
