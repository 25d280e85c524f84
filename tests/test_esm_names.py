"""ESM parameters that checkpoints keep under other names: LayerNorm's legacy gamma/beta and
the rotary inv_freq per layer (older checkpoints: a copy in every layer; transformers 5 saves one
under a literal `*`). The parity checkpoints cover the names transformers 5 writes; these cover
the older layout."""

from converter.models.esm import INV_FREQ, saved_alias

LAYER = "esm.encoder.layer.{}.attention.self.rotary_embeddings.inv_freq"


def test_older_checkpoints_give_layer_zeros_inv_freq():
    tensors = frozenset(LAYER.format(i) for i in range(3))
    assert saved_alias(tensors, INV_FREQ) == LAYER.format(0)


def test_transformers_5_saves_inv_freq_under_a_star():
    tensors = frozenset({LAYER.format("*")})
    assert saved_alias(tensors, INV_FREQ) == LAYER.format("*")


def test_headless_checkpoints_and_legacy_norm_names():
    name = "esm.encoder.layer.1.attention.LayerNorm.weight"
    tensors = frozenset({"encoder.layer.1.attention.LayerNorm.gamma"})
    assert saved_alias(tensors, name) == "esm.encoder.layer.1.attention.LayerNorm.gamma"
    assert saved_alias(tensors, name.replace("weight", "bias")) is None
