"""A request's build options (features, --release, static-cache's max_seq_len): checked before
anything is queued, part of its identity, and carried through the queue's JSON."""

from __future__ import annotations

import pytest

from pipeline.request import BadRequest, ConversionRequest


def request(**options) -> ConversionRequest:
    return ConversionRequest("org/model", ("cpu",), ("f32",), **options)


def test_unknown_features_are_refused_by_name():
    with pytest.raises(BadRequest, match="unknown feature 'warp-drive': the features are"):
        request(features=("text-only", "warp-drive"))


def test_max_seq_len_needs_static_cache_and_a_whole_number():
    with pytest.raises(BadRequest, match="max_seq_len sizes the static-cache feature's buffers"):
        request(features=("prune-prefill-prefix",), max_seq_len=2048)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(BadRequest, match="max_seq_len must be a whole number"):
            request(max_seq_len=bad)


def test_build_options_reach_build_and_tell_requests_apart():
    featured = request(features=("prune-prefill-prefix", "text-only"), release=True)
    assert featured.build_options() == {
        "features": ["prune-prefill-prefix", "text-only"],
        "release": True,
    }
    assert request().build_options() == {"features": [], "release": False}
    keys = {request().key(), featured.key(), request(release=True).key()}
    assert len(keys) == 3
    assert request().key() == "org/model@default [cpu-f32] -> pr"  # plain keys as before
    assert ConversionRequest.from_dict(featured.to_dict()) == featured
