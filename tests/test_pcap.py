"""pcap captures (``output.pcap``): streamed to files as the run goes, never held in memory,
and decodable by an independent decoder (scapy): radiotap rate, signal, noise, channel, FCS
flag, transmit power and xlayer's SINR vendor field, QoS Data with the level as TID, one TCP
flow's segments out of one node's capture; the node selection and snap length; and what
happens to the files — in the result folder's staging folder during ``xlayer.run(out=...)``, in
a temporary folder owned by the result otherwise, errors writing them as ``OSError``.

Expected radio numbers come from one-hop ``propagation = "range"`` links, where every node in
range receives the transmit power itself: signal = ``tx_power_dbm``, noise = thermal noise
(``-174 dBm/Hz + 10 log10(bandwidth) + noise figure``), SINR = their difference.
"""
from __future__ import annotations

import gc
import math
import os
import pickle
import struct
from pathlib import Path

import pytest

import xlayer
from conftest import hidden_leftovers

scapy_all = pytest.importorskip("scapy.all", reason="scapy is in the test extra")
from scapy.layers.dot11 import Dot11, Dot11FCS, Dot11QoS, RadioTap  # noqa: E402
from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.utils import PcapReader  # noqa: E402


def one_hop(standard: str = "802.11b", rate: float = 11.0, access: str = "dcf",
            priority: int = 0, tx_power_dbm: float = 3.0, rate_bps: object = 200e3,
            **output) -> dict:
    """Two nodes 50 m apart received at the transmit power, a UDP flow 0 -> 1 (200 kbit/s)."""
    return {
        "duration_s": 1.0,
        "seed": 3,
        "radio": {"standard": standard, "data_rate_mbps": rate, "basic_rate_mbps": rate,
                  "propagation": "range", "tx_range_m": 100.0, "tx_power_dbm": tx_power_dbm},
        "mac": {"access": access},
        "topology": {"kind": "chain", "count": 2, "spacing_m": 50.0},
        "flows": [{"src": 0, "dst": 1, "rate_bps": rate_bps, "payload_bytes": 500,
                   "priority": priority}],
        "output": {"pcap": True, **output},
    }


def thermal_noise_dbm(bandwidth_hz: float, noise_figure_db: float = 7.0) -> float:
    return -174.0 + 10 * math.log10(bandwidth_hz) + noise_figure_db


def packets(data: bytes, tmp_path: Path, name: str = "capture.pcap"):
    path = tmp_path / name
    path.write_bytes(data)
    with PcapReader(str(path)) as reader:
        return list(reader)


def vendor_sinr_db(rt: RadioTap) -> float:
    """xlayer's SINR field: scapy leaves the vendor namespace undecoded (``notdecoded``):
    OUI 02:58:4c, sub-namespace 0, skip_length 2, then an s16 in hundredths of a dB."""
    raw = bytes(rt.notdecoded)
    oui, sub, skip = raw[:3], raw[3], struct.unpack("<H", raw[4:6])[0]
    assert (oui, sub, skip) == (b"\x02\x58\x4c", 0, 2)
    return struct.unpack("<h", raw[6:8])[0] / 100


def test_radiotap_fields_decode_to_the_link_budget(tmp_path):
    result = xlayer.run(one_hop())
    noise = thermal_noise_dbm(22e6)  # 802.11b
    rx = packets(result.pcaps[1], tmp_path)
    data = [p for p in rx if p.haslayer(Dot11FCS) and p[Dot11FCS].type == 2]
    assert len(data) > 40
    for p in data:
        rt = p[RadioTap]
        assert rt.Flags.FCS and not rt.Flags.ShortPreamble
        assert rt.Rate == 11  # Mbit/s (scapy converts the 500 kbit/s units)
        assert rt.ChannelFrequency == 2412
        assert int(rt.ChannelFlags) == 0x00A0 and rt.ChannelFlags.CCK  # CCK, 2 GHz spectrum
        assert rt.dBm_AntSignal == 3
        assert rt.dBm_AntNoise == round(noise)
        assert vendor_sinr_db(rt) == pytest.approx(3.0 - noise, abs=0.006)
        frame = bytes(p[Dot11FCS])
        assert p[Dot11FCS].compute_fcs(frame[:-4]) == frame[-4:]  # the FCS checks
        assert p[Dot11FCS].addr1 == "02:00:00:00:00:01" and p[Dot11FCS].addr2 == "02:00:00:00:00:00"
        assert p[IP].src == "10.0.0.1" and p[IP].dst == "10.0.0.2"  # node n is 10.0.0.(n + 1)
    sent = [p for p in packets(result.pcaps[0], tmp_path) if p[Dot11FCS].type == 2]
    assert len(sent) == len(data)
    for p in sent:
        rt = p[RadioTap]
        # scapy does not decode the dBm TX power field (radiotap bit 10), the header's last
        # byte: it is left as the one byte not decoded.
        assert rt.present.dBm_TX_Power and struct.unpack("b", bytes(rt.notdecoded)) == (3,)
        assert not rt.present.dBm_AntSignal and not rt.present.VendorNS


def test_an_80211a_capture_names_the_5_ghz_ofdm_channel_and_its_rate(tmp_path):
    result = xlayer.run(one_hop(standard="802.11a", rate=24.0, tx_power_dbm=-2.0))
    p = next(p for p in packets(result.pcaps[1], tmp_path) if p[Dot11FCS].type == 2)
    rt = p[RadioTap]
    assert rt.Rate == 24 and rt.ChannelFrequency == 5180
    assert int(rt.ChannelFlags) == 0x0140 and rt.ChannelFlags.OFDM  # OFDM, 5 GHz spectrum
    noise = thermal_noise_dbm(20e6)  # 802.11a
    assert rt.dBm_AntSignal == -2 and rt.dBm_AntNoise == round(noise)
    assert vendor_sinr_db(rt) == pytest.approx(-2.0 - noise, abs=0.006)


@pytest.mark.parametrize("access,priority", [("802.11e", 2), ("diffq8", 6)])
def test_edca_data_frames_are_qos_data_with_the_level_as_tid(tmp_path, access, priority):
    result = xlayer.run(one_hop(access=access, priority=priority))
    data = [p for p in packets(result.pcaps[1], tmp_path) if p[Dot11FCS].type == 2]
    assert data and all(p[Dot11FCS].subtype == 8 for p in data)  # QoS Data
    assert {p[Dot11QoS].TID for p in data} == {priority}
    assert {p[Dot11QoS].Ack_Policy for p in data} == {0}  # Normal Ack
    plain = xlayer.run(one_hop(access="dcf"))
    data = [p for p in packets(plain.pcaps[1], tmp_path) if p[Dot11FCS].type == 2]
    assert data and all(p[Dot11FCS].subtype == 0 and not p.haslayer(Dot11QoS) for p in data)


def test_one_tcp_flow_is_extracted_whole_from_the_sinks_capture(tmp_path):
    # A TCP bulk transfer over two hops 0 -> 1 -> 2; node 2's capture (its radio decodes
    # node 1's frames to it) holds every segment it received, MAC retries included.
    scenario = {
        "duration_s": 3.0,
        "seed": 1,
        "radio": {"propagation": "range", "tx_range_m": 250.0},
        "topology": {"kind": "chain", "count": 3, "spacing_m": 200.0},
        "flows": [{"src": 0, "dst": 2, "transport": "tcp", "size_bytes": 100_000,
                   "payload_bytes": 1000}],
        "output": {"pcap": True, "pcap_nodes": [2]},
    }
    result = xlayer.run(scenario)
    assert list(result.pcaps) == [2]
    sink_mac, sink_ip = "02:00:00:00:00:02", "10.0.0.3"
    segments, acks = set(), []
    for p in packets(result.pcaps[2], tmp_path):
        if not p.haslayer(TCP) or p[TCP].sport != 9000:  # flow 0's port
            continue
        if p[Dot11FCS].addr1 == sink_mac and p[IP].dst == sink_ip:
            segments.add((p[TCP].seq, len(p[TCP].payload)))
        elif p[Dot11FCS].addr2 == sink_mac:
            acks.append(p[TCP].ack)
    data = sorted((s, n) for s, n in segments if n > 0)
    # The distinct data segments tile the stream: each starts where the one before ended.
    assert data and all(a + n == b for (a, n), (b, _) in zip(data, data[1:]))
    assert data[-1][0] + data[-1][1] - data[0][0] == 100_000
    assert max(acks) >= data[-1][0] + data[-1][1]  # the sink acknowledged all of it


def test_the_snap_length_cuts_records_and_keeps_their_original_length(tmp_path):
    result = xlayer.run(one_hop(pcap_snaplen=80))
    data = result.pcaps[1]
    assert struct.unpack("<I", data[16:20])[0] == 80
    off, lengths = 24, set()
    while off < len(data):
        incl, orig = struct.unpack("<II", data[off + 8:off + 16])
        assert incl == min(orig, 80)
        lengths.add(orig)
        off += 16 + incl
    assert max(lengths) == 28 + 24 + 8 + 528 + 4  # radiotap, MAC header, LLC, IP packet, FCS


@pytest.mark.parametrize("output,message", [
    ({"pcap_nodes": [0, 7]}, "output.pcap_nodes[1]: node 7 does not exist"),
    ({"pcap_nodes": [1, 1]}, "output.pcap_nodes[1]: node 1 is listed twice"),
    ({"pcap_nodes": []}, "output.pcap_nodes: empty"),
    ({"pcap_snaplen": 10}, "output.pcap_snaplen: must be between 28"),
    ({"pcap_snaplen": "big"}, "output.pcap_snaplen"),
])
def test_bad_capture_options_are_errors_naming_the_field(output, message):
    with pytest.raises(xlayer.ScenarioError, match=r"^" + __import__("re").escape(message)):
        xlayer.Simulation(one_hop(**output))


def test_only_the_selected_nodes_are_captured_and_written(tmp_path):
    out = tmp_path / "out"
    result = xlayer.run(one_hop(pcap_nodes=[1]), out=out)
    assert list(result.pcaps) == [1] and 0 not in result.pcaps
    assert sorted(p.name for p in out.glob("*.pcap")) == ["node1.pcap"]
    sim = xlayer.Simulation(one_hop(pcap_nodes=[1]))
    with pytest.raises(xlayer.ScenarioError, match="output.pcap_nodes: node 0 is not captured"):
        sim.pcap(0)
    with pytest.raises(xlayer.ScenarioError, match="node 5 does not exist"):
        sim.pcap(5)


# ----------------------------------------------------------------------------------------------
# Where the bytes go


def test_run_with_out_streams_into_the_staging_folder_and_reads_the_result_folder(tmp_path):
    out = tmp_path / "out"
    seen = []

    def progress(now_s, end_s):
        staging = [p for p in tmp_path.iterdir() if p.name.startswith(".out.partial-")]
        sizes = [(p / "node1.pcap").stat().st_size for p in staging]
        seen.append((out.exists(), sizes))

    # A saturated hop: some 700 kB of capture a second, far more than a capture's buffer.
    result = xlayer.run(one_hop(rate_bps="saturate"), out=out, progress=progress)
    assert not any(exists for exists, _ in seen), "the result folder appears only at the end"
    growth = [sizes[0] for _, sizes in seen]
    assert growth[-1] > growth[len(growth) // 2] > 24, "the capture grows on disk as the run goes"
    assert result.pcaps.path(1) == out / "node1.pcap"
    assert result.pcaps[1] == (out / "node1.pcap").read_bytes()
    assert hidden_leftovers(tmp_path) == []


def test_an_interrupted_run_leaves_no_folder_and_no_capture(tmp_path):
    out = tmp_path / "out"

    def interrupt(now_s, end_s):
        if now_s > 0.3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        xlayer.run(one_hop(), out=out, progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_a_run_without_folder_keeps_its_captures_in_a_temporary_folder_the_result_owns(tmp_path):
    result = xlayer.Simulation(one_hop()).run()
    folder = result.pcaps.path(0).parent
    assert folder.is_dir() and len(result.pcaps[0]) > 24
    # Written elsewhere, the files are linked or copied whole.
    copy = result.write(tmp_path / "copy")
    assert (copy / "node0.pcap").read_bytes() == result.pcaps[0]
    assert (copy / "node1.pcap").read_bytes() == result.pcaps[1]
    # Pickled (as a sweep's workers send results), the captures travel as bytes.
    clone = pickle.loads(pickle.dumps(result))
    assert dict(clone.pcaps) == dict(result.pcaps)
    del result, clone
    gc.collect()
    assert not folder.exists(), "removed once nothing needs it"
    assert (copy / "node0.pcap").stat().st_size > 24, "the written folder keeps its files"


def test_the_capture_so_far_is_readable_during_a_run():
    sim = xlayer.Simulation(one_hop())
    sim.run_until(0.3)
    early = sim.pcap(1)
    sim.run_until(0.6)
    later = sim.pcap(1)
    assert len(later) > len(early) > 24 and later.startswith(early)


def test_a_full_disk_is_an_oserror_naming_the_capture(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    folder = tmp_path / "captures"
    folder.mkdir()
    os.symlink("/dev/full", folder / "node1.pcap")  # every write: ENOSPC
    sim = xlayer.Simulation(one_hop(), pcap_dir=folder)
    with pytest.raises(OSError) as e:
        sim.run()
    assert e.value.errno == 28
    assert "cannot write the pcap capture of node 1" in str(e.value)
    assert e.value.filename == str(folder / "node1.pcap")


def test_a_capture_folder_removed_during_a_run_is_an_error_naming_out(tmp_path):
    import shutil

    out = tmp_path / "out"

    def remove_staging(now_s, end_s):
        for p in tmp_path.iterdir():
            if p.name.startswith(".out.partial-"):
                shutil.rmtree(p)

    with pytest.raises(OSError) as e:
        xlayer.run(one_hop(), out=out, progress=remove_staging)
    assert e.value.filename == str(out) and ".partial" not in str(e.value)
    assert list(tmp_path.iterdir()) == []
