"""A pytest plugin for PennyLane's device test suite (``pl-device-test``) on backline.qubit.

backline.qubit is a Clifford (stabilizer) device that only samples. A test that needs a
non-Clifford gate, an analytic result or a quantity sampling cannot give fails inside the
device with one of backline's own errors, each naming what it needed; this plugin reports
those tests as skipped with that reason — only those errors, raised by the device, count.
Every other failure stays a failure. At the end it prints the skips grouped by reason.

    pl-device-test --device backline.qubit --shots 10000 -p backline_pl_plugin
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from backline import errors

#: Errors that mean "outside a sampling Clifford device's scope", with the reason shown.
OUT_OF_SCOPE = {
    errors.NonCliffordGateError: "needs a non-Clifford gate",
    errors.UnsupportedMeasurementError: "needs a measurement a sampling device cannot give",
    errors.ShotsMissingError: "analytic mode (no shots)",
}

#: Tests whose failure a Clifford sampler cannot avoid although no backline error is raised,
#: by name pattern, with the reason.
KNOWN = {
    r"test_tracker\.py::TestTracker::test_tracker_updates_in_analytic": "analytic mode (no shots)",
}

_reasons: Counter = Counter()
_tests: list = []


def _why(e: BaseException) -> str:
    for cls, reason in OUT_OF_SCOPE.items():
        if isinstance(e, cls):
            msg = str(e).split(":")[0]
            return f"{reason}: {msg}"
    return str(e)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except tuple(OUT_OF_SCOPE) as e:
        why = _why(e)
        _reasons[why.split(":")[0]] += 1
        _tests.append((pyfuncitem.nodeid, why))
        pytest.skip(f"backline.qubit: {why}")
    except Exception:
        for pattern, reason in KNOWN.items():
            if re.search(pattern, pyfuncitem.nodeid):
                _reasons[reason] += 1
                _tests.append((pyfuncitem.nodeid, reason))
                pytest.skip(f"backline.qubit: {reason}")
        raise


def pytest_terminal_summary(terminalreporter):
    if not _reasons:
        return
    terminalreporter.section("backline.qubit: tests outside a Clifford sampling device's scope")
    for reason, n in _reasons.most_common():
        terminalreporter.write_line(f"{n:5d} skipped: {reason}")
    import os

    out = os.environ.get("BACKLINE_PL_SKIPS")
    if out:
        with open(out, "w") as f:
            for nodeid, why in _tests:
                f.write(f"{nodeid}\t{why}\n")
