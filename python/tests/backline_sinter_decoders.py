"""The entry of sinter's own decoder test suite (`sinter/_decoding/_decoding_test.py`, shipped in
the sinter wheel) into backline: `SINTER_PYTEST_CUSTOM_DECODERS=backline_sinter_decoders:decoders`
with this folder on PYTHONPATH (sinter imports the module by its top-level name).
scripts/test.d/30-python.sh runs the suite so against every backline decoder."""

from backline.sinter import decoders

__all__ = ["decoders"]
