"""A compiled kernel's entry point: the dispatcher's variant for the types given, called as is."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, types

from itasc_ros.core.compiled_call import entry_point
from itasc_ros.core.control._input_kernels import take_joint_state
from itasc_ros.core.kinematics._kernels import INPUT_VECTOR


@njit
def _scaled_sum(x, scale, out):  # pragma: no cover - compiled
    total = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] * scale
        total += out[i]
    return total


@njit(types.float64(INPUT_VECTOR))
def _first(x):  # pragma: no cover - compiled
    return x[0]


def test_the_entry_point_is_the_variant_the_dispatcher_calls() -> None:
    x, out = np.arange(4.0), np.zeros(4)
    call = entry_point(_scaled_sum, (x, 0.0, out))
    assert call is not _scaled_sum and not hasattr(call, "compile")
    assert call(x, 2.0, out) == _scaled_sum(x, 2.0, np.zeros(4)) == 12.0
    np.testing.assert_array_equal(out, 2.0 * x)
    assert call(x, 3, out) == 18.0  # a float's place takes an int
    assert len(_scaled_sum.overloads) == 1  # made once, for the example's types
    assert entry_point(_scaled_sum, (np.zeros(2), 1.0, np.zeros(2))) is call


def test_an_explicit_signature_gives_its_one_variant_of_any_layout() -> None:
    call = entry_point(_first)
    matrix = np.arange(12.0).reshape(3, 4)
    column = matrix[:, 1]  # strided
    readonly = np.frombuffer(np.array([5.0, 6.0]).tobytes())
    assert (call(column), call(readonly), call(np.array([7.0]))) == (1.0, 5.0, 7.0)
    assert entry_point(take_joint_state) is entry_point(take_joint_state)


def test_without_example_arguments_a_dispatcher_needs_exactly_one_variant() -> None:
    @njit
    def never_called(x):  # pragma: no cover - compiled
        return x

    with pytest.raises(ValueError, match="not one"):
        entry_point(never_called)


def test_a_python_function_is_called_as_it_is() -> None:
    def timed(*args: object) -> float:
        return 1.0

    assert entry_point(timed, (1.0,)) is timed
    assert entry_point(timed) is timed
