"""converter.components.relative_buckets against transformers' T5 bucketing, every distance."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.t5.modeling_t5 import T5Attention

from converter.components.relative_buckets import bucket_table
from converter.errors import ConfigError


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("buckets, max_distance", [(32, 128), (8, 5), (16, 20), (64, 300)])
def test_bucket_table_matches_transformers(bidirectional, buckets, max_distance):
    table = bucket_table(bidirectional, buckets, max_distance)
    distance = torch.arange(-3 * max_distance, 3 * max_distance + 1)
    expected = T5Attention._relative_position_bucket(
        distance, bidirectional=bidirectional, num_buckets=buckets, max_distance=max_distance
    )
    clipped = np.clip(distance.numpy(), -max_distance, max_distance) + max_distance
    np.testing.assert_array_equal(table[clipped], expected.numpy())


def test_a_reach_within_the_exact_buckets_is_refused():
    with pytest.raises(ConfigError, match="relative_attention_max_distance"):
        bucket_table(True, 32, 8)
