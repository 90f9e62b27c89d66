"""Process plumbing shared by ``python -m backline serve`` and the executor."""

from __future__ import annotations

import ctypes
import signal


def exit_with_parent():
    """Asks the kernel to send this process SIGTERM when its parent exits."""
    # prctl(PR_SET_PDEATHSIG, SIGTERM): the kernel signals us when the parent exits.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
