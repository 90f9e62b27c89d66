"""``import backline.qp as qp``: the reference's Python as its listings print it.

The reference writes its programs against one namespace, ``qp`` — PennyLane's, with the
placement API in it. This module is that namespace: every PennyLane name (``qp.device``,
``qp.qnode``, ``qp.set_shots``, ``qp.Hadamard``, ``qp.measure``, ``qp.sample``, ``qp.X`` …)
resolves to PennyLane's own object (delegated on first use, nothing copied, PennyLane itself
untouched), and backline adds its own:

* the placement: ``qp.Backline``, ``qp.Controller``, ``qp.Coprocessor``,
  ``qp.CoprocessorFunction``, ``qp.Endpoint``;
* the runtime calls: ``qp.runtime_call`` with ``GET_SESSION``, ``ROLE_CONTROLLER``,
  ``ROLE_COPROCESSOR``, ``STAGE_PAYLOAD``, ``POST``, ``WORK_ITEM``, ``COLLECT``;
* ``qp.backline`` — the ``backline`` package itself: ``qp.backline.decode``,
  ``qp.backline.triton_decoder``, ``qp.backline.css_bp_decoder`` …;
* ``qp.qjit`` — PennyLane-Catalyst's ``qjit``, with backline placements as Catalyst devices
  (see :func:`backline.qjit`); ``qp.compile_once`` — backline's own compile-once path.

So a listing of the reference runs with its ``import pennylane as qp`` line changed to
``import backline.qp as qp`` (``examples/paper/``).
"""

from __future__ import annotations

import pennylane as _pennylane

import backline

from .device import Backline
from .placement import Controller, Coprocessor, CoprocessorFunction, Endpoint
from .qec import (
    COLLECT,
    GET_SESSION,
    POST,
    ROLE_CONTROLLER,
    ROLE_COPROCESSOR,
    STAGE_PAYLOAD,
    WORK_ITEM,
    runtime_call,
)
from ._qjit import compile_once, qjit

__all__ = [
    "Backline",
    "COLLECT",
    "Controller",
    "Coprocessor",
    "CoprocessorFunction",
    "Endpoint",
    "GET_SESSION",
    "POST",
    "ROLE_CONTROLLER",
    "ROLE_COPROCESSOR",
    "STAGE_PAYLOAD",
    "WORK_ITEM",
    "backline",
    "compile_once",
    "qjit",
    "runtime_call",
]


def __getattr__(name: str):
    """Everything else is PennyLane's."""
    try:
        return getattr(_pennylane, name)
    except AttributeError:
        raise AttributeError(
            f"module 'backline.qp' has no attribute {name!r}: neither backline's placement API "
            "nor PennyLane has it"
        ) from None


def __dir__():
    return sorted(set(__all__) | set(dir(_pennylane)))
