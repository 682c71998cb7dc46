//! Reading captures: the records of a pcap or pcapng file, and the TCP segments in them
//! (the reverse of [`crate::metrics::pcap`], for captures made anywhere: `xlayer flavor`).
//!
//! The core does no file I/O: [`PcapReader`] walks the bytes its caller passes and
//! [`decode_tcp`] reads one record's frame down to its TCP header. Every malformed or truncated
//! input is an [`PcapError`] naming what is wrong and where (the record's number, counted from
//! 1, and its byte offset in the file); nothing here panics on any input (a fuzz target,
//! `fuzz/fuzz_targets/pcap.rs`, checks it).
//!
//! **File formats.**
//! - Classic pcap (pcap-savefile(5); draft-ietf-opsawg-pcap): both byte orders, magic
//!   `0xa1b2c3d4` (microsecond timestamps) and `0xa1b23c4d` (nanoseconds), and the
//!   "modified" pcap of Alexey Kuznetzov's patches (`0xa1b2cd34`, 24-byte record headers).
//! - pcapng (draft-ietf-opsawg-pcapng): Section Header, Interface Description (link type and
//!   `if_tsresol`, `if_tsoffset`), Enhanced Packet, Simple Packet and the obsolete Packet
//!   blocks, several sections with their own byte orders; other blocks are skipped.
//!
//! **Link types** (tcpdump.org's LINKTYPE list): Ethernet (1; 802.1Q/802.1ad VLAN tags and
//! 802.3 frames with LLC/SNAP), BSD loopback (0 and 108), raw IP (101, the legacy 12, and
//! 228 IPv4 / 229 IPv6), Linux cooked SLL (113) and SLL2 (276), 802.11 (105) and 802.11 with
//! radiotap (127): data frames (QoS data included, with the HT control field when the Order
//! bit says so) carrying LLC/SNAP; protected, null and non-data frames carry no TCP we can read,
//! and radiotap frames flagged with a bad FCS are skipped.
//!
//! **Network and transport.** IPv4 (RFC 791; a fragment other than the first carries no TCP
//! header) and IPv6 (RFC 8200; hop-by-hop, routing, destination options and fragment extension
//! headers), TCP (RFC 9293) with its options: MSS, window scale, SACK-permitted and SACK blocks
//! (RFC 2018), timestamps (RFC 7323). A segment's payload length comes from the IP lengths, not
//! from the bytes captured, so captures with a short snap length (headers only) work; a record
//! cut by its snap length inside the IP or TCP header carries no segment and is counted as
//! short, not refused (a capture setting, not damage). A header that contradicts itself in
//! bytes that were captured (an IPv4 header length below 20, a TCP data offset below 5 words,
//! an IP length shorter than its headers) is an error.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use thiserror::Error;

/// What is wrong with a capture, and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PcapError {
    /// The bytes start with no pcap or pcapng magic number.
    #[error("not a pcap or pcapng file: it starts with {found}{hint}")]
    NotPcap { found: String, hint: &'static str },
    /// The file ends inside a header or a record.
    #[error(
        "truncated capture: {what} at byte {offset}{record} needs {needed} bytes, {left} remain"
    )]
    Truncated {
        what: &'static str,
        offset: usize,
        record: RecordNo,
        needed: usize,
        left: usize,
    },
    /// A header field has an impossible value.
    #[error("malformed capture: {what} at byte {offset}{record}")]
    Malformed {
        what: String,
        offset: usize,
        record: RecordNo,
    },
    /// A link type this reader does not decode.
    #[error("unsupported link type {linktype} ({name}){record}; xlayer reads Ethernet (1), BSD loopback (0, 108), raw IP (101, 12, 228, 229), Linux cooked SLL (113) and SLL2 (276), 802.11 (105) and 802.11 with radiotap (127)")]
    UnsupportedLinkType {
        linktype: u32,
        name: &'static str,
        record: RecordNo,
    },
}

/// A record's number in its file (from 1), shown as ", record N" when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordNo(pub Option<u64>);

impl std::fmt::Display for RecordNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, " (record {n})"),
            None => Ok(()),
        }
    }
}

/// The file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap,
    PcapNg,
}

/// One captured frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Number in the file, from 1.
    pub index: u64,
    /// Byte offset of the record (its header) in the file.
    pub offset: usize,
    /// Byte offset of its frame (`data`) in the file.
    pub data_offset: usize,
    /// Capture time, nanoseconds since the Unix epoch (pcapng: with the interface's offset).
    pub time_ns: i128,
    pub linktype: u32,
    /// The bytes captured.
    pub data: &'a [u8],
    /// The frame's length on the wire.
    pub orig_len: u32,
}

// Classic pcap magic numbers as read little-endian.
const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
// pcapng.
const BLOCK_SHB: u32 = 0x0a0d_0d0a;
const BLOCK_IDB: u32 = 1;
const BLOCK_PB: u32 = 2;
const BLOCK_SPB: u32 = 3;
const BLOCK_EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
/// The largest record or block accepted (libpcap's limit for any link type is 256 kB; pcapng
/// blocks of a few MB exist, a larger one is damage).
const MAX_RECORD: usize = 16 << 20;

fn u16_at(b: &[u8], at: usize, be: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if be {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn u32_at(b: &[u8], at: usize, be: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if be {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: u32,
    snaplen: u32,
    /// Timestamp units per second.
    units_per_s: u128,
    offset_s: i64,
}

#[derive(Debug)]
enum State {
    Pcap {
        be: bool,
        ns: bool,
        header_len: usize,
        linktype: u32,
    },
    PcapNg {
        be: bool,
        interfaces: Vec<Interface>,
    },
}

/// Walks the records of a capture held in memory.
#[derive(Debug)]
pub struct PcapReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    next_index: u64,
    state: State,
    pub format: Format,
    done: bool,
}

fn describe_magic(b: &[u8]) -> (String, &'static str) {
    let shown: Vec<String> = b.iter().take(4).map(|x| format!("{x:02x}")).collect();
    let found = if shown.is_empty() {
        "nothing (the file is empty)".to_string()
    } else {
        format!("bytes {}, not a pcap magic number", shown.join(" "))
    };
    let hint = match b {
        [0x1f, 0x8b, ..] => " (a gzip file: decompress it first)",
        [b'P', b'K', 3, 4, ..] => " (a ZIP archive)",
        [0x0d, 0x0a, 0x0d, 0x0a, ..] => " (a pcapng block type with line endings changed)",
        _ => "",
    };
    (found, hint)
}

impl<'a> PcapReader<'a> {
    /// Reads the file header (pcap) or the first section header (pcapng).
    pub fn new(bytes: &'a [u8]) -> Result<PcapReader<'a>, PcapError> {
        if bytes.len() < 4 {
            let (found, hint) = describe_magic(bytes);
            return Err(PcapError::NotPcap { found, hint });
        }
        let le = u32_at(bytes, 0, false);
        let be = u32_at(bytes, 0, true);
        let classic = [MAGIC_US, MAGIC_NS, MAGIC_MODIFIED];
        if classic.contains(&le) || classic.contains(&be) {
            let big = !classic.contains(&le);
            let magic = if big { be } else { le };
            if bytes.len() < 24 {
                return Err(PcapError::Truncated {
                    what: "the pcap file header",
                    offset: 0,
                    record: RecordNo(None),
                    needed: 24,
                    left: bytes.len(),
                });
            }
            let major = u16_at(bytes, 4, big);
            if major != 2 {
                return Err(PcapError::Malformed {
                    what: format!(
                        "pcap version {major}.{} (expected 2.4)",
                        u16_at(bytes, 6, big)
                    ),
                    offset: 4,
                    record: RecordNo(None),
                });
            }
            // The link type is the low 16 bits; the upper ones may carry an FCS length.
            let linktype = u32_at(bytes, 20, big) & 0xffff;
            return Ok(PcapReader {
                bytes,
                pos: 24,
                next_index: 1,
                state: State::Pcap {
                    be: big,
                    ns: magic == MAGIC_NS,
                    header_len: if magic == MAGIC_MODIFIED { 24 } else { 16 },
                    linktype,
                },
                format: Format::Pcap,
                done: false,
            });
        }
        if le == BLOCK_SHB {
            let mut r = PcapReader {
                bytes,
                pos: 0,
                next_index: 1,
                state: State::PcapNg {
                    be: false,
                    interfaces: Vec::new(),
                },
                format: Format::PcapNg,
                done: false,
            };
            r.section_header()?;
            return Ok(r);
        }
        let (found, hint) = describe_magic(bytes);
        Err(PcapError::NotPcap { found, hint })
    }

    fn truncated(&self, what: &'static str, needed: usize, record: RecordNo) -> PcapError {
        PcapError::Truncated {
            what,
            offset: self.pos,
            record,
            needed,
            left: self.bytes.len().saturating_sub(self.pos),
        }
    }

    /// Reads a Section Header Block at `pos`, which starts a new section.
    fn section_header(&mut self) -> Result<(), PcapError> {
        let b = self.bytes;
        let at = self.pos;
        if b.len() - at < 28 {
            return Err(self.truncated("a pcapng section header block", 28, RecordNo(None)));
        }
        let magic = u32_at(b, at + 8, false);
        let be = match magic {
            BYTE_ORDER_MAGIC => false,
            m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
            m => {
                return Err(PcapError::Malformed {
                    what: format!("pcapng byte-order magic 0x{m:08x}"),
                    offset: at + 8,
                    record: RecordNo(None),
                })
            }
        };
        let len = u32_at(b, at + 4, be) as usize;
        let major = u16_at(b, at + 12, be);
        if major != 1 {
            return Err(PcapError::Malformed {
                what: format!("pcapng version {major} (expected 1)"),
                offset: at + 12,
                record: RecordNo(None),
            });
        }
        self.check_block_len(len, 28)?;
        self.state = State::PcapNg {
            be,
            interfaces: Vec::new(),
        };
        self.pos += len;
        Ok(())
    }

    fn check_block_len(&self, len: usize, min: usize) -> Result<(), PcapError> {
        if len < min || !len.is_multiple_of(4) || len > MAX_RECORD {
            return Err(PcapError::Malformed {
                what: format!(
                    "pcapng block length {len} (a multiple of 4, at least {min}, at most \
                     {MAX_RECORD})"
                ),
                offset: self.pos + 4,
                record: RecordNo(None),
            });
        }
        if self.bytes.len() - self.pos < len {
            return Err(self.truncated("a pcapng block", len, RecordNo(None)));
        }
        Ok(())
    }

    /// The next record, `None` at the end of the file, or the error that stops the reading
    /// (after which `None` follows).
    pub fn next_record(&mut self) -> Option<Result<Record<'a>, PcapError>> {
        if self.done {
            return None;
        }
        let r = match self.state {
            State::Pcap { .. } => self.next_pcap(),
            State::PcapNg { .. } => self.next_pcapng(),
        };
        match r {
            Ok(Some(rec)) => Some(Ok(rec)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn next_pcap(&mut self) -> Result<Option<Record<'a>>, PcapError> {
        let State::Pcap {
            be,
            ns,
            header_len,
            linktype,
        } = self.state
        else {
            return Ok(None);
        };
        let b = self.bytes;
        if self.pos == b.len() {
            return Ok(None);
        }
        let record = RecordNo(Some(self.next_index));
        if b.len() - self.pos < header_len {
            return Err(self.truncated("the record header", header_len, record));
        }
        let at = self.pos;
        let sec = u32_at(b, at, be) as i128;
        let frac = u32_at(b, at + 4, be) as i128;
        let incl = u32_at(b, at + 8, be) as usize;
        let orig = u32_at(b, at + 12, be);
        if incl > MAX_RECORD {
            return Err(PcapError::Malformed {
                what: format!("captured length {incl} (more than {MAX_RECORD} bytes)"),
                offset: at + 8,
                record,
            });
        }
        if b.len() - at - header_len < incl {
            self.pos = at + header_len;
            return Err(self.truncated("the record's frame", incl, record));
        }
        let data = &b[at + header_len..at + header_len + incl];
        let time_ns = sec * 1_000_000_000 + if ns { frac } else { frac * 1000 };
        self.pos = at + header_len + incl;
        self.next_index += 1;
        Ok(Some(Record {
            index: record.0.unwrap_or(0),
            offset: at,
            data_offset: at + header_len,
            time_ns,
            linktype,
            data,
            orig_len: orig,
        }))
    }

    fn next_pcapng(&mut self) -> Result<Option<Record<'a>>, PcapError> {
        loop {
            let b = self.bytes;
            if self.pos == b.len() {
                return Ok(None);
            }
            if b.len() - self.pos < 12 {
                return Err(self.truncated("a pcapng block header", 12, RecordNo(None)));
            }
            let at = self.pos;
            let State::PcapNg { be, .. } = self.state else {
                return Ok(None);
            };
            let kind = u32_at(b, at, be);
            if kind == BLOCK_SHB || kind.swap_bytes() == BLOCK_SHB {
                self.section_header()?;
                continue;
            }
            let len = u32_at(b, at + 4, be) as usize;
            self.check_block_len(len, 12)?;
            let trailer = u32_at(b, at + len - 4, be) as usize;
            if trailer != len {
                return Err(PcapError::Malformed {
                    what: format!(
                        "pcapng block lengths disagree ({len} at its start, {trailer} at its end)"
                    ),
                    offset: at + len - 4,
                    record: RecordNo(None),
                });
            }
            let body = &b[at + 8..at + len - 4];
            self.pos = at + len;
            match kind {
                BLOCK_IDB => self.interface(body, at, be)?,
                BLOCK_EPB | BLOCK_PB | BLOCK_SPB => {
                    return self.packet_block(kind, body, at, be).map(Some)
                }
                _ => {} // name resolution, statistics, custom blocks…
            }
        }
    }

    fn interface(&mut self, body: &[u8], at: usize, be: bool) -> Result<(), PcapError> {
        if body.len() < 8 {
            return Err(PcapError::Malformed {
                what: format!("interface description block of {} bytes", body.len() + 12),
                offset: at,
                record: RecordNo(None),
            });
        }
        let mut iface = Interface {
            linktype: u16_at(body, 0, be) as u32,
            snaplen: u32_at(body, 4, be),
            units_per_s: 1_000_000,
            offset_s: 0,
        };
        // Options: code (2), length (2), value padded to 4.
        let mut o = 8;
        while o + 4 <= body.len() {
            let code = u16_at(body, o, be);
            let olen = u16_at(body, o + 2, be) as usize;
            let v = o + 4;
            if code == 0 || v + olen > body.len() {
                break;
            }
            match (code, olen) {
                (9, 1) => {
                    let r = body[v];
                    let exp = (r & 0x7f) as u32;
                    let units = if r & 0x80 == 0 {
                        10u128.checked_pow(exp)
                    } else {
                        2u128.checked_pow(exp)
                    };
                    iface.units_per_s = match units {
                        Some(u) if u > 0 && exp <= 30 => u,
                        _ => {
                            return Err(PcapError::Malformed {
                                what: format!("interface timestamp resolution 0x{r:02x}"),
                                offset: at + 8 + v,
                                record: RecordNo(None),
                            })
                        }
                    };
                }
                (14, 8) => {
                    let hi = u32_at(body, v, be) as u64;
                    let lo = u32_at(body, v + 4, be) as u64;
                    iface.offset_s = if be { (hi << 32) | lo } else { (lo << 32) | hi } as i64;
                }
                _ => {}
            }
            o = v + olen.div_ceil(4) * 4;
        }
        if let State::PcapNg { interfaces, .. } = &mut self.state {
            interfaces.push(iface);
        }
        Ok(())
    }

    fn packet_block(
        &mut self,
        kind: u32,
        body: &'a [u8],
        at: usize,
        be: bool,
    ) -> Result<Record<'a>, PcapError> {
        let record = RecordNo(Some(self.next_index));
        let State::PcapNg { interfaces, .. } = &self.state else {
            unreachable!("packet blocks are read in pcapng state");
        };
        let fixed = match kind {
            BLOCK_EPB | BLOCK_PB => 20,
            _ => 4,
        };
        if body.len() < fixed {
            return Err(PcapError::Malformed {
                what: format!("packet block of {} bytes", body.len() + 12),
                offset: at,
                record,
            });
        }
        let (iface_id, ts, incl, orig, data_at) = match kind {
            BLOCK_SPB => {
                let orig = u32_at(body, 0, be);
                let snap = interfaces.first().map_or(u32::MAX, |i| i.snaplen);
                let snap = if snap == 0 { u32::MAX } else { snap };
                let incl = (orig.min(snap) as usize).min(body.len() - 4);
                (0usize, None, incl, orig, 4)
            }
            _ => {
                let (iface_id, ts_at) = if kind == BLOCK_EPB {
                    (u32_at(body, 0, be) as usize, 4)
                } else {
                    (u16_at(body, 0, be) as usize, 4)
                };
                let hi = u32_at(body, ts_at, be) as u64;
                let lo = u32_at(body, ts_at + 4, be) as u64;
                let incl = u32_at(body, 12, be) as usize;
                let orig = u32_at(body, 16, be);
                (iface_id, Some((hi << 32) | lo), incl, orig, 20)
            }
        };
        let Some(iface) = interfaces.get(iface_id).copied() else {
            return Err(PcapError::Malformed {
                what: format!(
                    "packet block of interface {iface_id}, but the section describes {}",
                    interfaces.len()
                ),
                offset: at + 8,
                record,
            });
        };
        if body.len() - data_at < incl {
            return Err(PcapError::Malformed {
                what: format!(
                    "captured length {incl} beyond its block ({} bytes of data)",
                    body.len() - data_at
                ),
                offset: at + 8 + 12,
                record,
            });
        }
        let time_ns = match ts {
            Some(units) => {
                let u = iface.units_per_s;
                let whole = (units as u128 / u) as i128;
                let frac = (units as u128 % u) * 1_000_000_000 / u;
                (whole + iface.offset_s as i128) * 1_000_000_000 + frac as i128
            }
            None => 0,
        };
        self.next_index += 1;
        Ok(Record {
            index: record.0.unwrap_or(0),
            offset: at,
            data_offset: at + 8 + data_at,
            time_ns,
            linktype: iface.linktype,
            data: &body[data_at..data_at + incl],
            orig_len: orig,
        })
    }
}

// ----------------------------------------------------------------------------------------------
// Frames down to TCP.

/// pcap link types (tcpdump.org, "Link-layer header types").
pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW_LEGACY: u32 = 12;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_IEEE802_11: u32 = 105;
pub const LINKTYPE_LOOP: u32 = 108;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IEEE802_11_RADIOTAP: u32 = 127;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

fn linktype_name(l: u32) -> &'static str {
    match l {
        9 => "PPP",
        10 => "FDDI",
        50 => "PPP in HDLC",
        104 => "Cisco HDLC",
        119 => "802.11 with Prism header",
        163 => "802.11 with AVS header",
        192 => "PPI",
        195 => "IEEE 802.15.4",
        220 => "USB",
        249 => "netlink",
        _ => "not decoded",
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// TCP flags.
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

/// A TCP segment read from a capture. Sequence and acknowledgement numbers are the 32-bit ones
/// of the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// Payload bytes, from the IP lengths (the segment's size on the wire, whatever was
    /// captured).
    pub payload_len: u32,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// SACK blocks (left, right edges) carried, as many as were captured.
    pub sack_blocks: Vec<(u32, u32)>,
    /// Timestamps option (value, echo reply).
    pub timestamps: Option<(u32, u32)>,
}

impl TcpSegment {
    pub fn syn(&self) -> bool {
        self.flags & TCP_SYN != 0
    }
    pub fn fin(&self) -> bool {
        self.flags & TCP_FIN != 0
    }
    pub fn rst(&self) -> bool {
        self.flags & TCP_RST != 0
    }
    pub fn ack_flag(&self) -> bool {
        self.flags & TCP_ACK != 0
    }
}

/// What one record holds, as far as TCP is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    Tcp(TcpSegment),
    /// Not a TCP segment (another protocol, a management frame, an encrypted one…).
    Other,
    /// Cut by the snap length before the end of the TCP header's fixed part.
    Short,
}

/// Where a decoding error is: the record and the offset of its frame in the file.
#[derive(Debug, Clone, Copy)]
struct At {
    record: u64,
    frame_offset: usize,
}

impl At {
    fn malformed(&self, off: usize, what: String) -> PcapError {
        PcapError::Malformed {
            what,
            offset: self.frame_offset + off,
            record: RecordNo(Some(self.record)),
        }
    }
}

/// Decodes a record's frame down to its TCP segment.
pub fn decode_tcp(rec: &Record<'_>) -> Result<Decoded, PcapError> {
    let at = At {
        record: rec.index,
        frame_offset: rec.data_offset,
    };
    let d = rec.data;
    let short_capture = (d.len() as u64) < rec.orig_len as u64;
    let ip = match rec.linktype {
        LINKTYPE_ETHERNET => ethernet(d),
        LINKTYPE_LINUX_SLL => {
            if d.len() < 16 {
                None
            } else {
                Some((u16::from_be_bytes([d[14], d[15]]), 16))
            }
        }
        LINKTYPE_LINUX_SLL2 => {
            if d.len() < 20 {
                None
            } else {
                Some((u16::from_be_bytes([d[0], d[1]]), 20))
            }
        }
        LINKTYPE_RAW | LINKTYPE_RAW_LEGACY => match d.first().map(|b| b >> 4) {
            Some(4) => Some((ETHERTYPE_IPV4, 0)),
            Some(6) => Some((ETHERTYPE_IPV6, 0)),
            Some(_) => return Ok(Decoded::Other),
            None => None,
        },
        LINKTYPE_IPV4 => Some((ETHERTYPE_IPV4, 0)),
        LINKTYPE_IPV6 => Some((ETHERTYPE_IPV6, 0)),
        LINKTYPE_NULL | LINKTYPE_LOOP => {
            if d.len() < 4 {
                None
            } else {
                // The address family, in the capturing host's byte order (NULL) or big-endian
                // (LOOP): AF_INET is 2 everywhere, AF_INET6 24, 28 or 30 by system.
                let fam = if rec.linktype == LINKTYPE_LOOP {
                    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
                } else {
                    let le = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
                    if le < 0x100 {
                        le
                    } else {
                        le.swap_bytes()
                    }
                };
                match fam {
                    2 => Some((ETHERTYPE_IPV4, 4)),
                    24 | 28 | 30 => Some((ETHERTYPE_IPV6, 4)),
                    _ => return Ok(Decoded::Other),
                }
            }
        }
        LINKTYPE_IEEE802_11 => match ieee80211(d) {
            Wifi::Ip(t, o) => Some((t, o)),
            Wifi::Other => return Ok(Decoded::Other),
            Wifi::Short => None,
        },
        LINKTYPE_IEEE802_11_RADIOTAP => {
            let (skip, bad_fcs) = match radiotap(d) {
                Some(r) => r,
                None => {
                    if d.len() >= 4 && !short_capture {
                        return Err(at.malformed(
                            2,
                            format!(
                                "radiotap header length {} beyond its frame of {} bytes",
                                u16::from_le_bytes([d[2], d[3]]),
                                d.len()
                            ),
                        ));
                    }
                    return Ok(Decoded::Short);
                }
            };
            if bad_fcs {
                return Ok(Decoded::Other);
            }
            match ieee80211(&d[skip..]) {
                Wifi::Ip(t, o) => Some((t, skip + o)),
                Wifi::Other => return Ok(Decoded::Other),
                Wifi::Short => None,
            }
        }
        other => {
            return Err(PcapError::UnsupportedLinkType {
                linktype: other,
                name: linktype_name(other),
                record: RecordNo(Some(rec.index)),
            })
        }
    };
    let Some((ethertype, off)) = ip else {
        return Ok(Decoded::Short);
    };
    match ethertype {
        ETHERTYPE_IPV4 => ipv4(&d[off..], off, short_capture, &at),
        ETHERTYPE_IPV6 => ipv6(&d[off..], off, short_capture, &at),
        _ => Ok(Decoded::Other),
    }
}

/// The ethertype and offset of an Ethernet frame's payload (VLAN tags and LLC/SNAP skipped).
fn ethernet(d: &[u8]) -> Option<(u16, usize)> {
    let mut o = 12;
    loop {
        if d.len() < o + 2 {
            return None;
        }
        let t = u16::from_be_bytes([d[o], d[o + 1]]);
        match t {
            0x8100 | 0x88a8 | 0x9100 => o += 4,
            t if t <= 1500 => {
                // 802.3 length: LLC/SNAP (AA AA 03, OUI, ethertype) or nothing we read.
                if d.len() < o + 10 {
                    return None;
                }
                if d[o + 2..o + 5] == [0xaa, 0xaa, 0x03] {
                    return Some((u16::from_be_bytes([d[o + 8], d[o + 9]]), o + 10));
                }
                return Some((0, o + 2));
            }
            t => return Some((t, o + 2)),
        }
    }
}

enum Wifi {
    Ip(u16, usize),
    Other,
    Short,
}

/// An 802.11 frame (IEEE 802.11-2020 §9.2.4): a data frame's LLC/SNAP ethertype and offset.
fn ieee80211(d: &[u8]) -> Wifi {
    if d.len() < 2 {
        return Wifi::Short;
    }
    let fc0 = d[0];
    let flags = d[1];
    let ftype = (fc0 >> 2) & 0x3;
    let subtype = fc0 >> 4;
    if ftype != 2 || fc0 & 0x3 != 0 {
        return Wifi::Other; // management, control, extension; or a protocol version ≠ 0
    }
    if subtype & 0x4 != 0 || flags & 0x40 != 0 {
        return Wifi::Other; // no body (null, CF-ack/poll only); or protected
    }
    let mut o = 24;
    if flags & 0x03 == 0x03 {
        o += 6; // four addresses
    }
    if subtype & 0x8 != 0 {
        o += 2; // QoS control
        if flags & 0x80 != 0 {
            o += 4; // HT control (+HTC: the Order bit of a QoS data frame)
        }
    }
    if d.len() < o + 8 {
        return Wifi::Short;
    }
    let llc = &d[o..o + 8];
    // RFC 1042 SNAP (OUI 00-00-00) or 802.1H bridge tunnel (00-00-F8).
    if llc[0..3] == [0xaa, 0xaa, 0x03] && (llc[3..6] == [0, 0, 0] || llc[3..6] == [0, 0, 0xf8]) {
        Wifi::Ip(u16::from_be_bytes([llc[6], llc[7]]), o + 8)
    } else {
        Wifi::Other
    }
}

/// The radiotap header's length and whether its Flags field says the FCS is bad
/// (radiotap.org: "Flags", bit 0x40); `None` when the header does not fit the frame.
fn radiotap(d: &[u8]) -> Option<(usize, bool)> {
    if d.len() < 8 {
        return None;
    }
    let len = u16::from_le_bytes([d[2], d[3]]) as usize;
    if len < 8 || len > d.len() {
        return None;
    }
    let present = u32::from_le_bytes([d[4], d[5], d[6], d[7]]);
    // The presence words: while bit 31 is set another follows.
    let mut o = 8;
    let mut word = present;
    while word & (1 << 31) != 0 {
        if o + 4 > len {
            return None;
        }
        word = u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]);
        o += 4;
    }
    let mut bad_fcs = false;
    if present & (1 << 1) != 0 {
        if present & 1 != 0 {
            o = o.div_ceil(8) * 8 + 8; // TSFT: u64, aligned to 8
        }
        if o < len {
            bad_fcs = d[o] & 0x40 != 0;
        }
    }
    Some((len, bad_fcs))
}

fn ipv4(d: &[u8], base: usize, short_capture: bool, at: &At) -> Result<Decoded, PcapError> {
    if d.len() < 20 {
        return Ok(Decoded::Short);
    }
    let version = d[0] >> 4;
    if version != 4 {
        return Err(at.malformed(base, format!("IPv4 header with version {version}")));
    }
    let ihl = (d[0] & 0x0f) as usize * 4;
    if ihl < 20 {
        return Err(at.malformed(base, format!("IPv4 header length {ihl} (< 20 bytes)")));
    }
    let total = u16::from_be_bytes([d[2], d[3]]) as usize;
    if d[9] != 6 {
        return Ok(Decoded::Other);
    }
    let frag_offset = u16::from_be_bytes([d[6], d[7]]) & 0x1fff;
    if frag_offset != 0 {
        return Ok(Decoded::Other); // a later fragment: no TCP header
    }
    // A total length of 0 is what TSO-offloaded segments carry in captures at the sender.
    let total = if total == 0 && !short_capture {
        d.len()
    } else {
        total
    };
    if total < ihl + 20 {
        return Err(at.malformed(
            base + 2,
            format!("IPv4 total length {total} shorter than its headers ({ihl} + 20 bytes)"),
        ));
    }
    if !short_capture && total > d.len() {
        return Err(at.malformed(
            base + 2,
            format!(
                "IPv4 total length {total} beyond the {} bytes of the frame",
                d.len()
            ),
        ));
    }
    let src = IpAddr::V4(Ipv4Addr::new(d[12], d[13], d[14], d[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(d[16], d[17], d[18], d[19]));
    if d.len() < ihl {
        return Ok(Decoded::Short);
    }
    tcp(&d[ihl..], base + ihl, total - ihl, src, dst, at)
}

fn ipv6(d: &[u8], base: usize, short_capture: bool, at: &At) -> Result<Decoded, PcapError> {
    if d.len() < 40 {
        return Ok(Decoded::Short);
    }
    let version = d[0] >> 4;
    if version != 6 {
        return Err(at.malformed(base, format!("IPv6 header with version {version}")));
    }
    let payload = u16::from_be_bytes([d[4], d[5]]) as usize;
    if payload == 0 {
        return Ok(Decoded::Other); // a jumbogram (RFC 2675), or an offloaded segment
    }
    if !short_capture && 40 + payload > d.len() {
        return Err(at.malformed(
            base + 4,
            format!(
                "IPv6 payload length {payload} beyond the {} bytes of the frame",
                d.len() - 40
            ),
        ));
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&d[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&d[24..40]);
    let mut next = d[6];
    let mut o = 40;
    loop {
        match next {
            6 => break,
            0 | 43 | 60 => {
                if d.len() < o + 2 {
                    return Ok(Decoded::Short);
                }
                next = d[o];
                o += (d[o + 1] as usize + 1) * 8;
            }
            44 => {
                if d.len() < o + 8 {
                    return Ok(Decoded::Short);
                }
                let frag_offset = u16::from_be_bytes([d[o + 2], d[o + 3]]) >> 3;
                if frag_offset != 0 {
                    return Ok(Decoded::Other);
                }
                next = d[o];
                o += 8;
            }
            _ => return Ok(Decoded::Other),
        }
        if o > 40 + payload {
            return Err(at.malformed(
                base + 4,
                format!(
                    "IPv6 extension headers ({} bytes) beyond its payload length {payload}",
                    o - 40
                ),
            ));
        }
    }
    if o + 20 > 40 + payload {
        return Err(at.malformed(
            base + 4,
            format!(
                "IPv6 payload length {payload} shorter than its headers ({} + 20 bytes)",
                o - 40
            ),
        ));
    }
    if d.len() < o {
        return Ok(Decoded::Short);
    }
    tcp(
        &d[o..],
        base + o,
        40 + payload - o,
        IpAddr::V6(Ipv6Addr::from(src)),
        IpAddr::V6(Ipv6Addr::from(dst)),
        at,
    )
}

/// A TCP header (RFC 9293 §3.1) in `d` (what was captured of it); `segment_len` is the
/// segment's length from the IP header.
fn tcp(
    d: &[u8],
    base: usize,
    segment_len: usize,
    src: IpAddr,
    dst: IpAddr,
    at: &At,
) -> Result<Decoded, PcapError> {
    if d.len() < 20 {
        return Ok(Decoded::Short);
    }
    let data_offset = (d[12] >> 4) as usize * 4;
    if data_offset < 20 {
        return Err(at.malformed(
            base + 12,
            format!("TCP data offset {} words (< 5)", data_offset / 4),
        ));
    }
    if data_offset > segment_len {
        return Err(at.malformed(
            base + 12,
            format!("TCP header of {data_offset} bytes in a segment of {segment_len}"),
        ));
    }
    let mut s = TcpSegment {
        src,
        dst,
        sport: u16::from_be_bytes([d[0], d[1]]),
        dport: u16::from_be_bytes([d[2], d[3]]),
        seq: u32::from_be_bytes([d[4], d[5], d[6], d[7]]),
        ack: u32::from_be_bytes([d[8], d[9], d[10], d[11]]),
        flags: d[13],
        window: u16::from_be_bytes([d[14], d[15]]),
        payload_len: (segment_len - data_offset) as u32,
        mss: None,
        window_scale: None,
        sack_permitted: false,
        sack_blocks: Vec::new(),
        timestamps: None,
    };
    // Options: as far as they were captured.
    let opts = &d[20..data_offset.min(d.len())];
    let mut o = 0;
    while o < opts.len() {
        let kind = opts[o];
        match kind {
            0 => break,
            1 => {
                o += 1;
                continue;
            }
            _ => {}
        }
        if o + 1 >= opts.len() {
            break;
        }
        let len = opts[o + 1] as usize;
        if len < 2 {
            return Err(at.malformed(
                base + 20 + o + 1,
                format!("TCP option {kind} with length {len} (< 2)"),
            ));
        }
        if o + len > data_offset - 20 {
            return Err(at.malformed(
                base + 20 + o + 1,
                format!("TCP option {kind} of {len} bytes beyond the TCP header"),
            ));
        }
        if o + len > opts.len() {
            break; // cut by the snap length
        }
        let v = &opts[o + 2..o + len];
        match (kind, len) {
            (2, 4) => s.mss = Some(u16::from_be_bytes([v[0], v[1]])),
            (3, 3) => s.window_scale = Some(v[0]),
            (4, 2) => s.sack_permitted = true,
            (5, _) => {
                for b in v.chunks_exact(8) {
                    s.sack_blocks.push((
                        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    ));
                }
            }
            (8, 10) => {
                s.timestamps = Some((
                    u32::from_be_bytes([v[0], v[1], v[2], v[3]]),
                    u32::from_be_bytes([v[4], v[5], v[6], v[7]]),
                ))
            }
            _ => {}
        }
        o += len;
    }
    Ok(Decoded::Tcp(s))
}

/// Builders of capture bytes, for this module's tests and the capture pipeline's.
#[cfg(test)]
pub(crate) mod build {
    /// An IPv4 packet carrying a TCP header with `options` (padded to 4 bytes) and
    /// `payload_len` bytes of payload (zeros).
    #[allow(clippy::too_many_arguments)]
    pub fn ipv4_tcp(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        options: &[u8],
        payload_len: usize,
    ) -> Vec<u8> {
        let tcp = tcp_header(sport, dport, seq, ack, flags, options);
        let total = 20 + tcp.len() + payload_len;
        let mut p = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&tcp);
        p.resize(total, 0);
        p
    }

    /// An IPv6 packet (with a hop-by-hop options header when `hop_by_hop`) carrying TCP.
    pub fn ipv6_tcp(
        sport: u16,
        dport: u16,
        seq: u32,
        payload_len: usize,
        hop_by_hop: bool,
    ) -> Vec<u8> {
        let tcp = tcp_header(sport, dport, seq, 1, 0x18, &[]);
        let ext = if hop_by_hop { 8 } else { 0 };
        let payload = ext + tcp.len() + payload_len;
        let mut p = vec![0x60, 0, 0, 0, (payload >> 8) as u8, payload as u8];
        p.push(if hop_by_hop { 0 } else { 6 });
        p.push(64);
        let mut src = [0u8; 16];
        src[15] = 1;
        src[0] = 0x20;
        src[1] = 0x01;
        let mut dst = src;
        dst[15] = 2;
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        if hop_by_hop {
            p.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // next: TCP; PadN
        }
        p.extend_from_slice(&tcp);
        p.resize(40 + payload, 0);
        p
    }

    pub fn tcp_header(
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        options: &[u8],
    ) -> Vec<u8> {
        let mut opts = options.to_vec();
        while !opts.len().is_multiple_of(4) {
            opts.push(0);
        }
        let words = (20 + opts.len()) / 4;
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&seq.to_be_bytes());
        t.extend_from_slice(&ack.to_be_bytes());
        t.push((words as u8) << 4);
        t.push(flags);
        t.extend_from_slice(&65535u16.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
        t.extend_from_slice(&opts);
        t
    }

    pub fn eth_frame(ethertype: u16, vlan: bool, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// A classic pcap file: `(time ns, frame, original length)` records.
    pub fn pcap(
        linktype: u32,
        big_endian: bool,
        nanos: bool,
        snaplen: u32,
        recs: &[(u64, Vec<u8>, u32)],
    ) -> Vec<u8> {
        let w32 = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend_from_slice(&w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
        out.extend_from_slice(&w16(2));
        out.extend_from_slice(&w16(4));
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&w32(snaplen));
        out.extend_from_slice(&w32(linktype));
        for (t, frame, orig) in recs {
            let cut = &frame[..frame.len().min(snaplen as usize)];
            out.extend_from_slice(&w32((t / 1_000_000_000) as u32));
            let frac = t % 1_000_000_000;
            out.extend_from_slice(&w32(if nanos { frac } else { frac / 1000 } as u32));
            out.extend_from_slice(&w32(cut.len() as u32));
            out.extend_from_slice(&w32(*orig));
            out.extend_from_slice(cut);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    fn syn_options() -> Vec<u8> {
        // MSS 1460, SACK-permitted, timestamps, NOP, window scale 7.
        vec![
            2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
        ]
    }

    fn records(bytes: &[u8]) -> Result<Vec<Record<'_>>, PcapError> {
        let mut r = PcapReader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record() {
            out.push(rec?);
        }
        Ok(out)
    }

    fn only_tcp(bytes: &[u8]) -> TcpSegment {
        let recs = records(bytes).unwrap();
        assert_eq!(recs.len(), 1);
        match decode_tcp(&recs[0]).unwrap() {
            Decoded::Tcp(s) => s,
            other => panic!("not TCP: {other:?}"),
        }
    }

    #[test]
    fn both_byte_orders_and_timestamp_units_give_the_same_records() {
        let ip = ipv4_tcp(A, B, 40000, 80, 7, 0, TCP_SYN, &[], 0);
        let frame = eth_frame(0x0800, false, &ip);
        let t = 1_700_000_000_123_456_000u64;
        let mut seen = Vec::new();
        for be in [false, true] {
            for ns in [false, true] {
                let file = pcap(1, be, ns, 65535, &[(t, frame.clone(), frame.len() as u32)]);
                let recs = records(&file).unwrap();
                assert_eq!(recs.len(), 1);
                assert_eq!(recs[0].data, &frame[..]);
                assert_eq!(recs[0].linktype, 1);
                assert_eq!(recs[0].data_offset, 40);
                seen.push(recs[0].time_ns);
            }
        }
        assert!(seen.iter().all(|&x| x == t as i128), "{seen:?}");
    }

    #[test]
    fn tcp_options_mss_sack_permitted_timestamps_and_window_scale_are_read() {
        let ip = ipv4_tcp(A, B, 40000, 80, 0xdead_beef, 0, TCP_SYN, &syn_options(), 0);
        let s = only_tcp(&pcap(
            101,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        ));
        assert_eq!((s.sport, s.dport, s.seq), (40000, 80, 0xdead_beef));
        assert_eq!(s.src, IpAddr::V4(Ipv4Addr::from(A)));
        assert!(s.syn() && !s.ack_flag());
        assert_eq!(s.mss, Some(1460));
        assert!(s.sack_permitted);
        assert_eq!(s.timestamps, Some((1, 0)));
        assert_eq!(s.window_scale, Some(7));
        assert_eq!(s.payload_len, 0);
    }

    #[test]
    fn sack_blocks_are_read_from_acks() {
        let mut opts = vec![1, 1, 5, 18];
        for v in [100u32, 200, 300, 400] {
            opts.extend_from_slice(&v.to_be_bytes());
        }
        let ip = ipv4_tcp(B, A, 80, 40000, 1, 50, TCP_ACK, &opts, 0);
        let s = only_tcp(&pcap(
            228,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        ));
        assert_eq!(s.sack_blocks, vec![(100, 200), (300, 400)]);
        assert_eq!(s.ack, 50);
    }

    #[test]
    fn payload_length_comes_from_ip_when_the_snap_length_cuts_the_payload() {
        let ip = ipv4_tcp(A, B, 1, 2, 1000, 1, TCP_ACK, &[], 1448);
        let frame = eth_frame(0x0800, false, &ip);
        let s = only_tcp(&pcap(
            1,
            false,
            true,
            96,
            &[(0, frame.clone(), frame.len() as u32)],
        ));
        assert_eq!(s.payload_len, 1448);
    }

    #[test]
    fn a_record_cut_inside_the_tcp_header_is_short_not_an_error() {
        let ip = ipv4_tcp(A, B, 1, 2, 1000, 1, TCP_ACK, &[], 100);
        let frame = eth_frame(0x0800, false, &ip);
        let file = pcap(
            1,
            false,
            true,
            14 + 20 + 10,
            &[(0, frame.clone(), frame.len() as u32)],
        );
        let recs = records(&file).unwrap();
        assert_eq!(decode_tcp(&recs[0]).unwrap(), Decoded::Short);
    }

    #[test]
    fn link_types_ethernet_vlan_sll_sll2_raw_loopback_and_802_11_carry_the_same_segment() {
        let ip = ipv4_tcp(A, B, 5001, 6001, 42, 9, TCP_ACK, &[], 10);
        let mut sll = vec![0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&ip);
        let mut sll2 = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 4, 6, 2, 0, 0, 0, 0, 1, 0, 0,
        ];
        sll2.extend_from_slice(&ip);
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(&ip);
        // 802.11 QoS data, to the AP (ToDS), LLC/SNAP.
        let mut wifi = vec![0x88, 0x01, 0, 0];
        wifi.extend_from_slice(&[0; 18]);
        wifi.extend_from_slice(&[0, 0]); // sequence control
        wifi.extend_from_slice(&[0, 0]); // QoS control
        wifi.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
        wifi.extend_from_slice(&ip);
        wifi.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // FCS
                                                           // Radiotap with TSFT (aligned to 8) and Flags (FCS at end), then the 802.11 frame.
        let mut rt = vec![0, 0, 17, 0, 0x03, 0, 0, 0];
        rt.extend_from_slice(&[0; 8]); // TSFT
        rt.push(0x10); // Flags: FCS at end
        rt.extend_from_slice(&wifi);
        let cases: Vec<(u32, Vec<u8>)> = vec![
            (1, eth_frame(0x0800, false, &ip)),
            (1, eth_frame(0x0800, true, &ip)),
            (113, sll),
            (276, sll2),
            (101, ip.clone()),
            (12, ip.clone()),
            (228, ip.clone()),
            (0, null),
            (105, wifi),
            (127, rt.clone()),
        ];
        for (lt, frame) in cases {
            let s = only_tcp(&pcap(
                lt,
                false,
                false,
                65535,
                &[(0, frame.clone(), frame.len() as u32)],
            ));
            assert_eq!(
                (s.sport, s.dport, s.seq, s.ack, s.payload_len),
                (5001, 6001, 42, 9, 10),
                "link type {lt}"
            );
        }
        // The same radiotap frame flagged with a bad FCS carries nothing.
        rt[16] |= 0x40;
        let file = pcap(
            127,
            false,
            false,
            65535,
            &[(0, rt.clone(), rt.len() as u32)],
        );
        assert_eq!(
            decode_tcp(&records(&file).unwrap()[0]).unwrap(),
            Decoded::Other
        );
    }

    #[test]
    fn ieee80211_management_null_and_protected_frames_are_not_tcp() {
        let beacon = [0x80u8, 0, 0, 0]
            .iter()
            .copied()
            .chain([0u8; 40])
            .collect::<Vec<_>>();
        let null = [0x48u8, 0x01, 0, 0]
            .iter()
            .copied()
            .chain([0u8; 20])
            .collect::<Vec<_>>();
        let protected = [0x88u8, 0x41, 0, 0]
            .iter()
            .copied()
            .chain([0u8; 60])
            .collect::<Vec<_>>();
        for f in [beacon, null, protected] {
            let file = pcap(105, false, false, 65535, &[(0, f.clone(), f.len() as u32)]);
            assert_eq!(
                decode_tcp(&records(&file).unwrap()[0]).unwrap(),
                Decoded::Other
            );
        }
    }

    #[test]
    fn ipv6_with_a_hop_by_hop_header_carries_tcp() {
        let ip = ipv6_tcp(443, 50000, 77, 20, true);
        let s = only_tcp(&pcap(
            229,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        ));
        assert_eq!((s.sport, s.seq, s.payload_len), (443, 77, 20));
        assert!(matches!(s.src, IpAddr::V6(_)));
        let frame = eth_frame(0x86dd, false, &ipv6_tcp(443, 50000, 77, 20, false));
        let s = only_tcp(&pcap(
            1,
            false,
            false,
            65535,
            &[(0, frame.clone(), frame.len() as u32)],
        ));
        assert_eq!(s.payload_len, 20);
    }

    /// A minimal pcapng file: a section (byte order `be`), one interface (link type 1, the
    /// timestamp resolution `tsresol`), then Enhanced Packet Blocks.
    fn pcapng(be: bool, tsresol: Option<u8>, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut out = Vec::new();
        let block = |out: &mut Vec<u8>, kind: u32, body: &[u8]| {
            let len = 12 + body.len().div_ceil(4) * 4;
            out.extend_from_slice(&w32(kind));
            out.extend_from_slice(&w32(len as u32));
            out.extend_from_slice(body);
            out.resize(out.len() + (4 - body.len() % 4) % 4, 0);
            out.extend_from_slice(&w32(len as u32));
        };
        let mut shb = w32(0x1a2b_3c4d).to_vec();
        shb.extend_from_slice(&w16(1));
        shb.extend_from_slice(&w16(0));
        shb.extend_from_slice(&[0xff; 8]);
        block(&mut out, 0x0a0d_0d0a, &shb);
        let mut idb = w16(1).to_vec();
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&w32(0));
        if let Some(r) = tsresol {
            idb.extend_from_slice(&w16(9));
            idb.extend_from_slice(&w16(1));
            idb.extend_from_slice(&[r, 0, 0, 0]);
            idb.extend_from_slice(&[0, 0, 0, 0]);
        }
        block(&mut out, 1, &idb);
        block(&mut out, 5, &[0; 8]); // an Interface Statistics Block, skipped
        for (units, f) in frames {
            let mut epb = w32(0).to_vec();
            epb.extend_from_slice(&w32((units >> 32) as u32));
            epb.extend_from_slice(&w32(*units as u32));
            epb.extend_from_slice(&w32(f.len() as u32));
            epb.extend_from_slice(&w32(f.len() as u32));
            epb.extend_from_slice(f);
            block(&mut out, 6, &epb);
        }
        out
    }

    #[test]
    fn pcapng_sections_in_either_byte_order_with_their_timestamp_resolution() {
        let frame = eth_frame(0x0800, false, &ipv4_tcp(A, B, 1, 2, 3, 4, TCP_ACK, &[], 0));
        let t_us = 1_600_000_000_000_001u64;
        let mut file = pcapng(false, None, &[(t_us, frame.clone())]);
        file.extend_from_slice(&pcapng(true, Some(9), &[(t_us * 1000 + 5, frame.clone())]));
        let mut r = PcapReader::new(&file).unwrap();
        assert_eq!(r.format, Format::PcapNg);
        let a = r.next_record().unwrap().unwrap();
        let b = r.next_record().unwrap().unwrap();
        assert!(r.next_record().is_none());
        assert_eq!(a.time_ns, t_us as i128 * 1000);
        assert_eq!(b.time_ns, t_us as i128 * 1000 + 5);
        assert_eq!((a.index, b.index), (1, 2));
        assert_eq!(a.data, &frame[..]);
        assert!(matches!(decode_tcp(&b).unwrap(), Decoded::Tcp(_)));
    }

    #[test]
    fn files_that_are_not_captures_are_refused_naming_their_first_bytes() {
        let e = PcapReader::new(b"hello world, this is text").unwrap_err();
        assert!(matches!(e, PcapError::NotPcap { .. }));
        assert!(e.to_string().contains("68 65 6c 6c"), "{e}");
        let e = PcapReader::new(&[0x1f, 0x8b, 8, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("gzip"), "{e}");
        let e = PcapReader::new(&[]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    #[test]
    fn a_truncated_record_names_its_number_and_offset() {
        let ip = ipv4_tcp(A, B, 1, 2, 3, 4, TCP_ACK, &[], 0);
        let file = pcap(
            101,
            false,
            false,
            65535,
            &[(0, ip.clone(), 40), (1, ip.clone(), 40)],
        );
        let cut = &file[..file.len() - 5];
        let mut r = PcapReader::new(cut).unwrap();
        assert!(r.next_record().unwrap().is_ok());
        let e = r.next_record().unwrap().unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, PcapError::Truncated { .. }), "{msg}");
        assert!(msg.contains("record 2") && msg.contains("byte 96"), "{msg}");
        assert!(r.next_record().is_none(), "nothing after the error");
        let e = PcapReader::new(&file[..20]).unwrap_err();
        assert!(e.to_string().contains("file header"), "{e}");
    }

    #[test]
    fn contradictory_headers_are_errors_naming_the_field_and_record() {
        let mut ip = ipv4_tcp(A, B, 1, 2, 3, 4, TCP_ACK, &[], 0);
        ip[20 + 12] = 0x30; // data offset 3 words
        let file = pcap(
            101,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        );
        let e = decode_tcp(&records(&file).unwrap()[0]).unwrap_err();
        assert!(e.to_string().contains("TCP data offset 3"), "{e}");
        assert!(e.to_string().contains("record 1"), "{e}");
        let mut ip = ipv4_tcp(A, B, 1, 2, 3, 4, TCP_ACK, &[], 0);
        ip[0] = 0x44; // IHL 4 words
        let file = pcap(
            101,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        );
        let e = decode_tcp(&records(&file).unwrap()[0]).unwrap_err();
        assert!(e.to_string().contains("IPv4 header length 16"), "{e}");
        let mut ip = ipv4_tcp(A, B, 1, 2, 3, 4, TCP_ACK, &[2, 9, 0, 0], 0);
        ip[40..44].copy_from_slice(&[8, 30, 0, 0]); // a timestamps option longer than the header
        let file = pcap(
            101,
            false,
            false,
            65535,
            &[(0, ip.clone(), ip.len() as u32)],
        );
        let e = decode_tcp(&records(&file).unwrap()[0]).unwrap_err();
        assert!(e.to_string().contains("TCP option 8 of 30 bytes"), "{e}");
    }

    #[test]
    fn an_unsupported_link_type_is_named() {
        let file = pcap(9, false, false, 65535, &[(0, vec![1, 2, 3], 3)]);
        let e = decode_tcp(&records(&file).unwrap()[0]).unwrap_err();
        assert!(e.to_string().contains("link type 9 (PPP)"), "{e}");
    }

    #[test]
    fn every_prefix_and_every_single_byte_change_of_a_capture_reads_or_fails_without_panicking() {
        let mut recs = Vec::new();
        for i in 0..4u32 {
            let ip = ipv4_tcp(A, B, 1, 2, i * 100, 1, TCP_ACK, &syn_options(), 100);
            recs.push((i as u64 * 1000, eth_frame(0x0800, true, &ip), 0));
        }
        for r in &mut recs {
            r.2 = r.1.len() as u32;
        }
        let file = pcap(1, false, true, 100, &recs);
        let walk = |b: &[u8]| {
            if let Ok(mut r) = PcapReader::new(b) {
                while let Some(rec) = r.next_record() {
                    if let Ok(rec) = rec {
                        let _ = decode_tcp(&rec);
                    }
                }
            }
        };
        for n in 0..file.len() {
            walk(&file[..n]);
        }
        for i in 0..file.len() {
            for v in [0u8, 0xff, 0x7f, 0x80, 1] {
                let mut m = file.clone();
                m[i] = v;
                walk(&m);
            }
        }
    }
}
