"""The decoder registry from Python: every registered setting is reachable from every Python
entry point (``_native.DemDecoder``, the sinter decoders, ``stream:`` specs), with the
registry's names and offline defaults, and one bad value gets the same message from each."""

from __future__ import annotations

import inspect

import pytest

from backline import _native, errors

sinter_mod = pytest.importorskip("backline.sinter")

MODEL = "error(0.1) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n"
CLASSES = {
    "bposd": sinter_mod.BpOsdSinterDecoder,
    "relay-bp": sinter_mod.RelayBpSinterDecoder,
    "matching": sinter_mod.MatchingSinterDecoder,
    "mobius": sinter_mod.MobiusSinterDecoder,
}


def registry():
    return {name: settings for name, _title, settings in _native.decoder_registry()}


def test_every_registered_decoder_has_a_sinter_decoder_and_a_stream_name():
    assert set(registry()) == set(CLASSES)
    for name in registry():
        _native.DemDecoder(MODEL, name, [], 1, "m.dem")


@pytest.mark.parametrize("name", list(CLASSES))
def test_every_setting_is_a_keyword_with_the_offline_default(name):
    cls = CLASSES[name]
    params = inspect.signature(cls).parameters
    for key, vtype, offline, _realtime, _range, _help in registry()[name]:
        assert key in params, f"{name}: {key} is no argument of {cls.__name__}"
        # The registry's offline default, but where the sinter decoders choose otherwise
        # (BP+OSD's f32 kernel in sweeps: `_SINTER_DEFAULTS`, documented there).
        default = sinter_mod._value_of(vtype, offline)
        default = sinter_mod._SINTER_DEFAULTS.get(name, {}).get(key, default)
        assert params[key].default == default, key
        # The keyword reaches the decoder: given its default, it is accepted end to end.
        decoder = cls(**{key: default})
        assert decoder.settings[key] == default
        decoder.compile_decoder_for_dem(dem=_stim_dem())
        # And the native constructor takes the registry's text.
        _native.DemDecoder(MODEL, name, [(key, offline)], 1, "m.dem")


def _stim_dem():
    stim = pytest.importorskip("stim")
    return stim.DetectorErrorModel(MODEL)


def test_alpha_iteration_scaling_factor_reaches_relay_bp_from_sinter():
    d = sinter_mod.RelayBpSinterDecoder(alpha=0.0, alpha_iteration_scaling_factor=2.0)
    d.compile_decoder_for_dem(dem=_stim_dem())
    with pytest.raises(errors.DecoderSettingsError, match=r"alpha_iteration_scaling_factor = -1: expected finite and > 0"):
        sinter_mod.RelayBpSinterDecoder(alpha_iteration_scaling_factor=-1.0).compile_decoder_for_dem(dem=_stim_dem())


def test_an_unknown_keyword_lists_the_decoders_settings():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gamma0'; its settings: bp_method, max_iter"):
        sinter_mod.BpOsdSinterDecoder(gamma0=0.1)
    with pytest.raises(TypeError, match="unexpected keyword argument .max_iter.; its settings: correlations, and threads"):
        sinter_mod.MatchingSinterDecoder(max_iter=3)
    with pytest.raises(errors.DecoderSettingsError, match=r"unknown setting `gamma0` \(expected one of bp_method"):
        _native.DemDecoder(MODEL, "bposd", [("gamma0", "0.1")], 1, "m.dem")
    with pytest.raises(errors.DecoderSettingsError, match=r"unknown decoder `mwpm` \(expected one of bposd, relay-bp, matching, mobius\)"):
        _native.DemDecoder(MODEL, "mwpm", [], 1, "m.dem")


@pytest.mark.parametrize(
    "name,key,bad",
    [
        ("bposd", "max_iter", 2_000_000),  # integer out of range
        ("bposd", "osd_method", "osd9"),  # word
        ("relay-bp", "gamma_dist_interval", (1.0, 2.0, 3.0)),  # interval
        ("relay-bp", "alpha", "x"),  # optional number
    ],
)
def test_one_bad_value_one_message_from_every_entry_point(name, key, bad):
    text = sinter_mod._settings_text({key: bad})[0][1]
    with pytest.raises(errors.DecoderSettingsError) as native:
        _native.DemDecoder(MODEL, name, [(key, text)], 1, "m.dem")
    with pytest.raises(errors.DecoderSettingsError) as via_sinter:
        CLASSES[name](**{key: bad}).compile_decoder_for_dem(dem=_stim_dem())
    assert str(native.value) == str(via_sinter.value)
    assert f"{key}: `" in str(native.value)
