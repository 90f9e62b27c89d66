"""The streaming-tail study's bounds: absurd grids are one-line errors (exit 2) before any
model is generated or bench run."""

import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "streaming-tail-study.py"


def study(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "--backline", "/nonexistent/backline",
                           *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, want", [
    (["--distances", "4"], "is not an odd distance"),
    (["--distances", "27"], "is not an odd distance"),
    (["--rounds", "0"], "is outside 1.."),
    (["--rounds", "100001"], "is outside 1.."),
    (["--distances", "3,5,7,9,11,13,15,17,19", "--rounds", "1,2,3,4,5,6,7,8"],
     "at most 64"),
    (["--shots", "1"], "--shots must be at least 2"),
    (["--shots", "10", "--warmup-shots", "10"], "must be less than --shots"),
    (["--p", "0.7"], "is outside (0, 0.5)"),
    (["--distances", "x"], "a comma-separated list of integers"),
])
def test_absurd_grids_are_one_line_errors(args, want):
    p = study(*args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], p.stderr
    assert lines[0].startswith("streaming-tail-study: error:")


def test_more_shots_in_all_than_the_bound_is_an_error():
    p = study("--distances", "3,5", "--rounds", "10,20", "--shots", "200000")
    assert p.returncode == 2 and "streaming-tail-study: error:" in p.stderr, p.stderr
