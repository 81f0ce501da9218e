"""`set_threads` and `torch_threads`: set, restore (also on exceptions), nest, validate."""

from __future__ import annotations

import os

import pytest
import torch

from structnets.training import set_threads, torch_threads
from structnets.training.threads import THREAD_ENVIRONMENT


@pytest.fixture
def two_threads():
    # The training conftest pins one thread; start these tests from a different count so a
    # restore to the wrong value is visible.
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_torch_threads_sets_and_restores(two_threads):
    with torch_threads(1) as previous:
        assert torch.get_num_threads() == 1
        assert previous == 2
    assert torch.get_num_threads() == 2


def test_torch_threads_restores_after_exception(two_threads):
    with pytest.raises(KeyError, match="boom"):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise KeyError("boom")
    assert torch.get_num_threads() == 2


def test_torch_threads_restores_when_body_changes_count(two_threads):
    with torch_threads(1):
        torch.set_num_threads(3)
    assert torch.get_num_threads() == 2


def test_torch_threads_nests(two_threads):
    with torch_threads(1):
        with torch_threads(3):
            assert torch.get_num_threads() == 3
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_torch_threads_restores_on_return_from_loop(two_threads):
    def first_even(values):
        for v in values:
            with torch_threads(1):
                if v % 2 == 0:
                    return v
        return None

    assert first_even([1, 3, 4, 5]) == 4
    assert torch.get_num_threads() == 2


def test_set_threads_returns_previous(two_threads):
    assert set_threads(1) == 2
    assert torch.get_num_threads() == 1
    assert set_threads(1) == 1


def test_set_threads_environment(two_threads, monkeypatch):
    for var in THREAD_ENVIRONMENT:
        monkeypatch.setenv(var, "7")
    set_threads(1)
    assert all(os.environ[var] == "7" for var in THREAD_ENVIRONMENT)  # untouched by default
    set_threads(1, environment=True)
    assert all(os.environ[var] == "1" for var in THREAD_ENVIRONMENT)


@pytest.mark.parametrize("bad", [0, -1, 4097])
def test_bad_thread_count_names_argument(bad, two_threads):
    with pytest.raises(ValueError, match=r"`threads` must be an int in \[1, 4096\], got"):
        with torch_threads(bad):
            pass
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("bad", [1.0, "1", True, None])
def test_non_int_thread_count_is_type_error(bad):
    with pytest.raises(TypeError, match="`threads` must be an int"):
        set_threads(bad)


def test_environment_flag_must_be_bool():
    with pytest.raises(TypeError, match="`environment` must be a bool"):
        set_threads(1, environment=1)
