"""MORE and DiffQ-MORE from Python (issue 19): the presets run a shipped scenario, flows.csv and
nodes.csv carry the MORE columns docs/scenario.md documents, and `xlayer compare` sets MORE
beside the single-path baseline. The document's claims are checked in
crates/xlayer-core/tests/more.rs (README, Validation)."""
import math
import pathlib

import xlayer

ROOT = pathlib.Path(__file__).resolve().parents[1]
PATH = ROOT / "scenarios" / "more-path.toml"
SHORT = ["duration_s=25.0", "warmup_s=12.0"]

FLOW_COLUMNS = ("more_batches", "more_decode_delay_s", "more_coded_tx", "more_tx_per_packet",
                "more_forwarders", "more_path_etx")
NODE_COLUMNS = ("more_source_tx", "more_forward_tx", "more_innovative", "more_redundant",
                "more_acks_tx", "more_stale")


def test_both_presets_decode_whole_batches_and_report_their_columns():
    for preset in ("more", "diffq-more"):
        r = xlayer.run(str(PATH), overrides=[f"stack.preset={preset}", *SHORT])
        f = r.flows.iloc[0]
        assert f["transport"] == "more", preset
        for c in FLOW_COLUMNS:
            assert c in r.flows.columns, (preset, c)
        for c in NODE_COLUMNS:
            assert c in r.nodes.columns, (preset, c)
        assert f["more_batches"] >= 1, preset
        # the application gets whole decoded batches of 32 packets of 1400 bytes
        assert f["app_bytes"] % (32 * 1400) == 0, preset
        assert f["more_tx_per_packet"] >= 1.0, preset
        assert math.isfinite(f["more_path_etx"]) and f["more_path_etx"] > 1.0, preset
        assert r.nodes["more_forward_tx"].sum() > 0, preset


def test_a_run_is_repeatable_bit_for_bit():
    a = xlayer.run(str(PATH), overrides=["stack.preset=diffq-more", *SHORT])
    b = xlayer.run(str(PATH), overrides=["stack.preset=diffq-more", *SHORT])
    assert a.flows.equals(b.flows)
    assert a.nodes.equals(b.nodes)
