"""The native module's edges: every exception it raises is a class of ``backline.errors``
(none looked up by a name that could be missing), and a panic in Rust, behind the one panic
boundary every call from Python goes through, is ``backline.errors.RunError`` — an
``Exception`` — never pyo3's ``PanicException``, which ``except Exception`` does not catch."""

from __future__ import annotations

import socket

import pytest

from backline import _native, errors, executor


def test_every_class_the_native_module_raises_is_in_backline_errors():
    names = _native.error_classes()
    assert len(names) == len(set(names)) >= 12, names
    for name in names:
        cls = getattr(errors, name, None)
        assert isinstance(cls, type), f"backline.errors has no class {name}"
        assert issubclass(cls, errors.BacklineError), name
        assert issubclass(cls, Exception), name
        assert cls.__module__ == "backline.errors", (name, cls.__module__)


def test_the_built_ins_the_docs_promise_are_still_raised():
    # A setting error is the package's class and a ValueError, as errors.py documents.
    with pytest.raises(errors.DecoderSettingsError) as e:
        _native.DemDecoder("error(0.1) D0 L0\n", "no-such-decoder", [])
    assert isinstance(e.value, ValueError)
    with pytest.raises(errors.UnknownTransportError) as e:
        _native.Server("carrier-pigeon", "", "k", [(0, "steane")])
    assert isinstance(e.value, ValueError)


def _assert_internal_error(excinfo, message: str) -> None:
    e = excinfo.value
    assert type(e) is errors.RunError, type(e)
    assert isinstance(e, Exception)
    assert type(e).__name__ != "PanicException"
    assert str(e) == f"internal error: {message}", str(e)


def test_a_panic_in_a_function_is_a_run_error():
    with pytest.raises(errors.RunError) as e:
        _native._panic_for_test("in a function")
    _assert_internal_error(e, "in a function")


def test_a_panic_in_a_constructor_method_or_getter_is_a_run_error():
    with pytest.raises(errors.RunError) as e:
        _native._PanicProbe(panic=True)
    _assert_internal_error(e, "_PanicProbe() asked to panic")
    probe = _native._PanicProbe()
    with pytest.raises(errors.RunError) as e:
        probe.method("in a method")
    _assert_internal_error(e, "in a method")
    with pytest.raises(errors.RunError) as e:
        probe.getter  # noqa: B018 — the getter is the call under test
    _assert_internal_error(e, "_PanicProbe.getter")
    with pytest.raises(errors.RunError) as e:
        _native._PanicProbe.opaque()
    _assert_internal_error(e, "a panic")


def test_except_exception_catches_a_panic():
    try:
        _native._panic_for_test("caught")
    except Exception as e:  # noqa: BLE001 — what a user's code writes
        caught = e
    assert isinstance(caught, errors.RunError)


def test_the_module_still_works_after_a_panic():
    for _ in range(3):
        with pytest.raises(errors.RunError):
            _native._panic_for_test("again")
    assert _native.latency_summary([1.0, 2.0, 3.0]) is not None
    assert _native.latency_summary([]) is None


def test_an_executor_answers_a_panic_as_a_named_failure(monkeypatch):
    """The executor process's run goes through the same boundary: a panic in it comes back to
    the caller as a RunError answer, and the executor does not die of it."""
    program = _native.compile(("one", 1, 1, 0, None, []), [("h", [0], 0.0), ("measure", [0, 0], 0.0),
                                                           ("output", [0], 0.0)]).to_bytes()

    def panicking_run(*_args):
        _native._panic_for_test("in the executor's run")

    monkeypatch.setattr(_native, "run", panicking_run)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        executor._send(ours, data=program)
        executor._run(theirs, {"shots": 4, "seed": 1})
        answer = executor._recv_json(ours)
    assert answer == {"ok": False, "kind": "RunError", "error": "internal error: in the executor's run"}
