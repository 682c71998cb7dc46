"""The shipped scenarios against references no one here wrote.

- ``scenarios/bianchi.toml`` against Bianchi's DCF saturation model (IEEE JSAC 18(3), 2000),
  computed here in Python from the paper's equations (7), (9) and (13) — an implementation
  separate from the Rust validation test, through the public API and the CLI's override path.
- pcap traces against the pcap and radiotap formats and the 802.11 FCS (CRC-32, checked with
  zlib).
"""
from __future__ import annotations

import importlib.util
import subprocess
import struct
import zlib

import pytest

import xlayer
from conftest import SCENARIOS, debian_tool

# Bianchi's model, written in Python from the paper's equations: the same function the ns-3
# saturation comparison prints (validation/ns3/compare_saturation.py).
_spec = importlib.util.spec_from_file_location(
    "compare_saturation", SCENARIOS.parent / "validation" / "ns3" / "compare_saturation.py")
_cs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cs)


def bianchi_throughput(n: int, rts: bool, payload: int = 1000) -> float:
    return _cs.bianchi(n, payload, collision_ifs="eifs", rts=rts)


@pytest.mark.parametrize("rts", [False, True], ids=["basic", "rts_cts"])
def test_bianchi_scenario_matches_the_model_within_5_percent(rts):
    res = xlayer.run(SCENARIOS / "bianchi.toml", overrides=[f"radio.rts_cts={'true' if rts else 'false'}", "duration_s=21"])
    model = bianchi_throughput(10, rts)
    sim = res.summary["aggregate_throughput_bps"]
    assert abs(sim - model) / model < 0.05, f"simulated {sim:.0f} bit/s, Bianchi {model:.0f} bit/s"


def test_bianchi_model_reproduces_the_papers_trend():
    # Basic access: throughput falls with n beyond a few stations; RTS/CTS is less sensitive.
    basic = [bianchi_throughput(n, False) for n in (5, 10, 20, 50)]
    assert basic == sorted(basic, reverse=True)
    assert bianchi_throughput(5, True) / bianchi_throughput(50, True) < basic[0] / basic[-1]


def read_pcap(data: bytes):
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    records, off = [], 24
    while off < len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        records.append((sec + frac * 1e-9, data[off + 16:off + 16 + incl]))
        assert incl == orig
        off += 16 + incl
    return magic, linktype, records


def test_pcap_traces_are_valid_80211_captures():
    res = xlayer.run(SCENARIOS / "default.toml", overrides=["output.pcap=true", "duration_s=2"])
    magic, linktype, records = read_pcap(res.pcaps[1])
    assert magic == 0xA1B23C4D  # nanosecond-resolution pcap
    assert linktype == 127  # LINKTYPE_IEEE802_11_RADIOTAP
    assert len(records) > 10
    times = [t for t, _ in records]
    assert times == sorted(times)
    kinds = set()
    frames = []
    for _, record in records:
        radiotap_len = struct.unpack("<H", record[2:4])[0]
        assert record[0] == 0 and radiotap_len in (15, 28)  # radiotap v0: sent, received
        flags = record[8 if radiotap_len == 15 else 12]
        assert flags & 0x10, "radiotap says the FCS is at the end"
        frames.append(record[radiotap_len:])
    for frame in frames:
        body, fcs = frame[:-4], struct.unpack("<I", frame[-4:])[0]
        assert zlib.crc32(body) == fcs, "802.11 FCS must be the CRC-32 of the frame"
        fc = frame[0]
        kinds.add((fc >> 2) & 0x3)  # frame type: 1 control, 2 data
    assert kinds == {1, 2}, "node 1 relays: it both sends data and acknowledges"
    data_frames = [f for f in frames if (f[0] >> 2) & 3 == 2]
    ip = data_frames[0][24 + 8:]
    assert ip[0] == 0x45 and ip[9] == 17, "an IPv4 header carrying UDP follows LLC/SNAP"


def test_tshark_decodes_the_trace(tmp_path):
    tshark = debian_tool("tshark", "tshark")
    res = xlayer.run(SCENARIOS / "default.toml", overrides=["output.pcap=true", "duration_s=2"])
    path = tmp_path / "node1.pcap"
    path.write_bytes(res.pcaps[1])
    out = subprocess.run(
        [tshark, "-r", str(path), "-T", "fields", "-e", "wlan.fc.type_subtype", "-e", "udp.length"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    rows = [line.split("\t") for line in out if line.strip()]
    subtypes = {r[0] for r in rows}
    assert {"0x0020", "0x001d"} <= subtypes or {"32", "29"} <= subtypes, subtypes  # data, ACK
    assert {r[1] for r in rows if len(r) > 1 and r[1]} == {"1008", "520"}  # UDP header + payload
    # Radiotap: every FCS good, 802.11b channel 1 (2412 MHz, CCK), rates of 11 (data) and
    # 1 Mbit/s (ACKs), a signal and noise on received frames, xlayer's vendor namespace there.
    fields = ["wlan.fcs.status", "radiotap.channel.freq", "radiotap.channel.flags.cck",
              "radiotap.datarate", "radiotap.dbm_antsignal", "radiotap.dbm_antnoise",
              "radiotap.vendor_oui", "radiotap.txpower"]
    out = subprocess.run(
        [tshark, "-r", str(path), "-o", "wlan.check_fcs:TRUE", "-T", "fields",
         *[a for f in fields for a in ("-e", f)]],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = [dict(zip(fields, line.split("\t"))) for line in out.splitlines() if line.strip()]
    assert rows and {r["wlan.fcs.status"] for r in rows} == {"2"}  # 2: good
    assert {r["radiotap.channel.freq"] for r in rows} == {"2412"}
    assert {r["radiotap.channel.flags.cck"] for r in rows} in ({"1"}, {"True"})
    assert {r["radiotap.datarate"] for r in rows} == {"11", "1"}
    received = [r for r in rows if r["radiotap.dbm_antsignal"]]
    sent = [r for r in rows if r["radiotap.txpower"]]
    assert received and sent and len(received) + len(sent) == len(rows)
    assert {r["radiotap.dbm_antnoise"] for r in received} == {"-94"}
    assert {r["radiotap.vendor_oui"] for r in received} == {str(0x02584C)}
    assert {r["radiotap.txpower"] for r in sent} == {"16"}


def test_tshark_analyses_one_tcp_flow_from_one_nodes_capture(tmp_path):
    """Issue 23: ``tcp.analysis`` works on one flow of one node's capture, once the node's own
    first transmissions are kept (the README's filter): no segment is taken for a retransmission
    or a duplicate ACK that TCP did not send as one."""
    tshark = debian_tool("tshark", "tshark")
    scenario = {
        "duration_s": 4.0,
        "radio": {"propagation": "range", "tx_range_m": 250.0},
        "topology": {"kind": "chain", "count": 3, "spacing_m": 200.0},
        "flows": [{"src": 0, "dst": 2, "transport": "tcp", "size_bytes": 200_000}],
        "output": {"pcap": True, "pcap_nodes": [0]},
    }
    res = xlayer.run(scenario)
    path = tmp_path / "node0.pcap"
    path.write_bytes(res.pcaps[0])
    flow_filter = "tcp.port == 9000 && wlan.ta == 02:00:00:00:00:00 && wlan.fc.retry == 0"
    fields = ["tcp.seq", "tcp.len", "tcp.analysis.retransmission", "tcp.analysis.bytes_in_flight"]
    out = subprocess.run(
        [tshark, "-r", str(path), "-Y", flow_filter, "-T", "fields",
         *[a for f in fields for a in ("-e", f)]],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = [dict(zip(fields, line.split("\t"))) for line in out.splitlines() if line.strip()]
    data = [r for r in rows if r["tcp.len"] not in ("", "0")]
    assert sum(int(r["tcp.len"]) for r in data) >= 200_000
    retransmitted = [r for r in data if r["tcp.analysis.retransmission"]]
    assert len(retransmitted) <= res.flows["retransmits"].iloc[0]
    # The analysis ran over the conversation: bytes in flight on most segments.
    assert sum(1 for r in data if r["tcp.analysis.bytes_in_flight"]) > 0.75 * len(data)
