"""Idefics 3's position buckets hinge on torch.arange's float32 boundaries: mobius computes
them as torch's CPU kernel does, bit for bit, for every grid a tower may have."""

import numpy as np
import torch

from converter.models.idefics3 import torch_arange


def test_bucket_boundaries_equal_torch_arange_bit_for_bit():
    for side in range(1, 512):
        want = torch.arange(1 / side, 1.0, 1 / side).numpy()
        np.testing.assert_array_equal(torch_arange(1 / side, 1.0, 1 / side), want, str(side))
