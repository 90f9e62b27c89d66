"""Helpers around a device: the IR after every pass, latency tables."""

from __future__ import annotations

import pennylane as qml


def ir_dumps(qnode, *args, name: str | None = None, **kwargs) -> list[tuple[str, str]]:
    """The IR of ``qnode(*args, **kwargs)`` on its ``backline.qubit`` device before the first
    pass (``"input"``) and after every pass, as ``[(stage, text)]``, without running it.

    The module is named after the QNode's function unless ``name`` is given.
    """
    dev = qnode.device
    if getattr(dev, "name", None) != "backline.qubit":
        raise TypeError(f"ir_dumps needs a QNode on backline.qubit, not {getattr(dev, 'name', dev)!r}")
    batch, _ = qml.workflow.construct_batch(qnode, level="device")(*args, **kwargs)
    name = name or getattr(qnode, "__name__", None) or getattr(getattr(qnode, "func", None), "__name__", "circuit")
    out = []
    for i, tape in enumerate(batch):
        _, compiled = dev.compile(tape, name=name if len(batch) == 1 else f"{name}_{i}", dumps=True)
        out.extend(compiled.dumps)
    return out


def format_latency(stats: dict | None, title: str = "decode rounds") -> str:
    """A table of :meth:`backline.RunInfo.latency` in µs."""
    if not stats:
        return f"{title}: no decode rounds"
    keys = [("round0_ns", "round 0"), ("mean_ns", "mean"), ("median_ns", "median"), ("std_ns", "std"),
            ("min_ns", "min"), ("p99_ns", "P99"), ("p999_ns", "P99.9"), ("p9999_ns", "P99.99"),
            ("p99999_ns", "P99.999"), ("max_ns", "max")]
    lines = [f"{title}: {int(stats['count'])} rounds after round 0, RTT in µs"]
    lines.append("  " + "  ".join(f"{label:>8}" for _, label in keys))
    lines.append("  " + "  ".join(f"{stats[k] / 1e3:8.3f}" for k, _ in keys))
    return "\n".join(lines)
