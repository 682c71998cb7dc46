#!/usr/bin/env python3
"""Seeds of the ``pcap`` fuzz target, into ``fuzz/corpus/pcap/``: the first records of the
shipped captures (``tests/data/captures/*.pcap.gz``, or the files given), each re-written in the
formats and link types the reader knows — classic pcap little- and big-endian, micro- and
nanosecond, pcapng, and the frames re-wrapped as Ethernet with a VLAN tag, raw IP, Linux
cooked SLL and SLL2, BSD loopback, 802.11 QoS data and 802.11 with radiotap — plus
``fuzz/pcap.dict`` (magic numbers, block types, ethertypes, TCP option kinds). Standard library
only. Run from the repository: ``python fuzz/make_pcap_seeds.py``."""
from __future__ import annotations

import gzip
import pathlib
import struct
import sys
from typing import Iterator, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORDS = 40

Record = Tuple[int, bytes, int]  # time ns, frame, original length


def read_pcap(data: bytes) -> Tuple[int, List[Record]]:
    """Link type and records of a classic pcap file (any byte order, us or ns)."""
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0xFFFF
    out: List[Record] = []
    pos = 24
    while pos + 16 <= len(data) and len(out) < RECORDS:
        sec, frac, incl, orig = struct.unpack(endian + "IIII", data[pos:pos + 16])
        frame = data[pos + 16:pos + 16 + incl]
        out.append((sec * 10**9 + (frac if nanos else frac * 1000), frame, orig))
        pos += 16 + incl
    return linktype, out


def ip_of(linktype: int, frame: bytes) -> bytes:
    """The IP packet of an Ethernet, SLL or SLL2 frame."""
    return {1: frame[14:], 113: frame[16:], 276: frame[20:]}.get(linktype, frame)


def write_pcap(linktype: int, recs: List[Record], endian: str = "<", nanos: bool = False) -> bytes:
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)]
    for t, frame, orig in recs:
        frac = t % 10**9 if nanos else (t % 10**9) // 1000
        out.append(struct.pack(endian + "IIII", t // 10**9, frac, len(frame), orig) + frame)
    return b"".join(out)


def write_pcapng(linktype: int, recs: List[Record]) -> bytes:
    def block(kind: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", kind, n) + body + struct.pack("<I", n)

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
           block(1, struct.pack("<HHI", linktype, 0, 0)
                 + struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0))]
    for t, frame, orig in recs:
        out.append(block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(frame), orig)
                         + frame))
    return b"".join(out)


def wraps(ip: bytes) -> Iterator[Tuple[str, int, bytes]]:
    """The same IP packet in every link type the reader decodes."""
    ethertype = b"\x86\xdd" if ip[:1] and ip[0] >> 4 == 6 else b"\x08\x00"
    yield "vlan", 1, b"\x02" * 6 + b"\x04" * 6 + b"\x81\x00\x00\x07" + ethertype + ip
    yield "raw", 101, ip
    yield "ipv4", 228, ip
    yield "sll", 113, struct.pack(">HHH8s", 4, 1, 6, b"\x02" * 6) + ethertype + ip
    yield "sll2", 276, ethertype + struct.pack(">HIHBB8s", 0, 3, 1, 4, 6, b"\x02" * 6) + ip
    yield "null", 0, struct.pack("<I", 2) + ip
    wifi = (b"\x88\x01\x00\x00" + b"\x02" * 18 + b"\x00\x00" + b"\x00\x00"
            + b"\xaa\xaa\x03\x00\x00\x00" + ethertype + ip)
    yield "wifi", 105, wifi
    radiotap = struct.pack("<BBHI", 0, 0, 12, (1 << 1) | (1 << 2)) + b"\x00\x0c\x00\x00"
    yield "radiotap", 127, radiotap + wifi


def main(argv: List[str]) -> None:
    corpus = ROOT / "fuzz" / "corpus" / "pcap"
    corpus.mkdir(parents=True, exist_ok=True)
    files = [pathlib.Path(a) for a in argv] or sorted(
        (ROOT / "tests" / "data" / "captures").glob("*.pcap.gz"))
    for path in files:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        linktype, recs = read_pcap(data)
        stem = path.name.split(".")[0]
        (corpus / f"{stem}.pcap").write_bytes(write_pcap(linktype, recs))
        (corpus / f"{stem}-be-ns.pcap").write_bytes(write_pcap(linktype, recs, ">", True))
        (corpus / f"{stem}.pcapng").write_bytes(write_pcapng(linktype, recs))
        ips = [(t, ip_of(linktype, f), o) for t, f, o in recs]
        for name, lt, _ in wraps(ips[0][1]):
            wrapped = [(t, next(w for n, _, w in wraps(ip) if n == name), o) for t, ip, o in ips]
            (corpus / f"{stem}-{name}.pcap").write_bytes(write_pcap(lt, wrapped[:12]))
    words = [b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\x34\xcd\xb2\xa1",
             b"\x0a\x0d\x0d\x0a", b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d", b"\x06\x00\x00\x00",
             b"\x01\x00\x00\x00", b"\x03\x00\x00\x00", b"\x08\x00", b"\x86\xdd", b"\x81\x00",
             b"\xaa\xaa\x03\x00\x00\x00", b"\x88\x01", b"\x02\x04\x05\xb4", b"\x04\x02",
             b"\x01\x01\x05\x0a", b"\x08\x0a", b"\x01\x03\x03\x07", b"\x45\x00", b"\x60\x00"]
    (ROOT / "fuzz" / "pcap.dict").write_text(
        "".join('"' + "".join(f"\\x{b:02x}" for b in w) + '"\n' for w in words))
    print(f"{len(list(corpus.iterdir()))} seeds in {corpus}")


if __name__ == "__main__":
    main(sys.argv[1:])
