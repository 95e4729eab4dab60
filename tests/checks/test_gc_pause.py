"""logdoctor.checks.gc_pause: the automatic collector off within the block, as it was after it."""

from __future__ import annotations

import gc

import pytest

from logdoctor.checks.gc_pause import no_automatic_collections


def test_paused_within_and_on_again_after_even_on_an_exception() -> None:
    assert gc.isenabled()
    with pytest.raises(KeyError), no_automatic_collections():
        assert not gc.isenabled()
        with no_automatic_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as it found it
        raise KeyError("x")
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with no_automatic_collections():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
