"""onnxruntime-genai's greedy generation of one sequence, as the tests compare it."""

from __future__ import annotations

from pathlib import Path

import onnxruntime_genai as og


def genai_greedy(model: og.Model | Path, max_length: int, prompt=None, inputs=None) -> list[int]:
    """The tokens generated after `prompt` (token ids) or `inputs` (a processor's named
    inputs), greedily, until an end token or `max_length` tokens in all."""
    model = model if isinstance(model, og.Model) else og.Model(str(model))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, do_sample=False)
    generator = og.Generator(model, params)
    if inputs is None:
        generator.append_tokens(prompt)
    else:
        generator.set_inputs(inputs)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens
