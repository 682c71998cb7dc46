//! Flavor detection over a capture (`xlayer flavor FILE.pcap`, issue 18 item 5): the TCP
//! segments of a pcap or pcapng file ([`crate::wire::pcap_read`]) grouped into connections and
//! run through the same passive [`Detector`] the simulator's nodes use.
//!
//! - **Connections** are keyed by their two endpoints (address, port). A SYN without ACK that
//!   opens the same 4-tuple again (a new initial sequence number, or after a FIN or RST) starts
//!   a new connection.
//! - **The data sender** of a connection is the side that sent more payload bytes (a tie goes
//!   to the side that sent the first SYN, else to the side seen first).
//! - **Sequence numbers** are unwrapped from 32 bits into the detector's 64-bit byte offsets,
//!   per sequence space (the sender's data and the receiver's ACKs of it share one), relative
//!   to the first value seen: each new value is taken as the nearest 64-bit value to the last
//!   one (within 2^31, RFC 9293's comparison rule), so a transfer may wrap any number of times.
//! - **Time** is the capture's, from its first record, made non-decreasing (a capture merged
//!   from several interfaces may step back a little).
//! - **Round trips from timestamps**: where segments carry TCP timestamps (RFC 7323), each
//!   data segment echoing (TSecr) a TSval that passed here on an ACK gives a sample of the
//!   sender-side round trip (here → sender → here), as passive RTT monitors do from
//!   timestamps; the samples refresh the detector's estimate
//!   ([`Detector::round_trip_sample`]), which the handshake alone would leave at the
//!   queue-free value.
//!
//! Depends on `wire` (the reader) and `transport::flavor` only; reads no files.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::sim::SimTime;
use crate::transport::flavor::{Detection, Detector, Segment};
use crate::wire::pcap_read::{decode_tcp, Decoded, Format, PcapError, PcapReader, TcpSegment};

/// One connection of a capture and what the detector says of its data sender.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionFlavor {
    /// The data sender.
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
    /// TCP segments of the connection, both ways.
    pub packets: u64,
    /// Payload bytes the data sender sent (retransmissions included).
    pub data_bytes: u64,
    pub detection: Detection,
    /// First and last segment, seconds from the capture's first record.
    pub first_s: f64,
    pub last_s: f64,
}

/// What a capture holds.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureFlavors {
    pub format: Format,
    pub records: u64,
    pub tcp_segments: u64,
    /// Records cut by their snap length before the end of a TCP header.
    pub short_records: u64,
    /// In order of each connection's first segment.
    pub connections: Vec<ConnectionFlavor>,
}

type Endpoint = (IpAddr, u16);

/// A segment kept for the second pass (after the data sender is known).
#[derive(Debug, Clone, Copy)]
struct Kept {
    time: SimTime,
    /// Sent by side 0 of the connection (the first side seen).
    from_a: bool,
    seq: u32,
    ack: u32,
    len: u32,
    flags: u8,
    mss: u16,
    sack_permitted: bool,
    sack_blocks: u8,
    /// The timestamps option (TSval, TSecr).
    timestamps: Option<(u32, u32)>,
}

#[derive(Debug)]
struct Conn {
    a: Endpoint,
    b: Endpoint,
    isn: [Option<u32>; 2],
    first_syn_from: Option<usize>,
    closed: bool,
    bytes: [u64; 2],
    segs: Vec<Kept>,
}

/// Unwraps 32-bit sequence numbers into 64-bit offsets (see the module doc).
#[derive(Debug, Clone, Copy)]
struct Unwrap {
    last32: u32,
    last64: u64,
}

impl Unwrap {
    /// 64-bit values start at 2^32, so a value somewhat before the first one stays positive.
    fn new(first: u32) -> Unwrap {
        Unwrap {
            last32: first,
            last64: 1 << 32,
        }
    }

    fn at(&mut self, v: u32) -> u64 {
        let delta = v.wrapping_sub(self.last32) as i32 as i64;
        let u = (self.last64 as i64).saturating_add(delta).max(0) as u64;
        self.last32 = v;
        self.last64 = u;
        u
    }
}

/// Reads a capture and detects the flavor of every TCP connection in it.
pub fn detect_flavors(bytes: &[u8]) -> Result<CaptureFlavors, PcapError> {
    run(bytes, false).map(|(c, _)| c)
}

/// The detector after a capture, keyed by each connection's index in
/// [`CaptureFlavors::connections`], for its evidence ([`Detector::evidence`]) and its window
/// estimates over time ([`Detector::window_trace`]).
pub fn detector_of(bytes: &[u8]) -> Result<Detector, PcapError> {
    run(bytes, true).map(|(_, d)| d)
}

fn run(bytes: &[u8], trace: bool) -> Result<(CaptureFlavors, Detector), PcapError> {
    let mut reader = PcapReader::new(bytes)?;
    let format = reader.format;
    let mut conns: Vec<Conn> = Vec::new();
    let mut by_tuple: HashMap<(Endpoint, Endpoint), usize> = HashMap::new();
    let (mut records, mut tcp_segments, mut short_records) = (0u64, 0u64, 0u64);
    let mut t0: Option<i128> = None;
    let mut last = SimTime(0);
    while let Some(rec) = reader.next_record() {
        let rec = rec?;
        records += 1;
        let seg = match decode_tcp(&rec)? {
            Decoded::Tcp(s) => s,
            Decoded::Short => {
                short_records += 1;
                continue;
            }
            Decoded::Other => continue,
        };
        tcp_segments += 1;
        let t0 = *t0.get_or_insert(rec.time_ns);
        let rel = (rec.time_ns - t0).clamp(0, u64::MAX as i128) as u64;
        last = last.max(SimTime(rel));
        add_segment(&mut conns, &mut by_tuple, &seg, last);
    }
    let mut detector = Detector::new(trace);
    let mut out = Vec::with_capacity(conns.len());
    for (key, c) in conns.iter().enumerate() {
        let sender = if c.bytes[0] != c.bytes[1] {
            if c.bytes[0] > c.bytes[1] {
                0
            } else {
                1
            }
        } else {
            c.first_syn_from.unwrap_or(0)
        };
        feed(&mut detector, key as u64, c, sender);
        let (src, dst) = if sender == 0 { (c.a, c.b) } else { (c.b, c.a) };
        let detection = detector
            .detection(key as u64)
            .expect("every connection has a segment");
        out.push(ConnectionFlavor {
            src: src.0,
            sport: src.1,
            dst: dst.0,
            dport: dst.1,
            packets: c.segs.len() as u64,
            data_bytes: c.bytes[sender],
            detection,
            first_s: c.segs.first().map_or(0.0, |s| s.time.as_secs_f64()),
            last_s: c.segs.last().map_or(0.0, |s| s.time.as_secs_f64()),
        });
    }
    Ok((
        CaptureFlavors {
            format,
            records,
            tcp_segments,
            short_records,
            connections: out,
        },
        detector,
    ))
}

fn add_segment(
    conns: &mut Vec<Conn>,
    by_tuple: &mut HashMap<(Endpoint, Endpoint), usize>,
    s: &TcpSegment,
    time: SimTime,
) {
    let from = (s.src, s.sport);
    let to = (s.dst, s.dport);
    let tuple = if from <= to { (from, to) } else { (to, from) };
    let pure_syn = s.syn() && !s.ack_flag();
    let existing = by_tuple.get(&tuple).copied().filter(|&i| {
        let c = &conns[i];
        let side = usize::from(c.a != from);
        // A new SYN opening the tuple again starts a new connection.
        !(pure_syn && (c.isn[side].is_some_and(|isn| isn != s.seq) || c.closed))
    });
    let i = match existing {
        Some(i) => i,
        None => {
            conns.push(Conn {
                a: from,
                b: to,
                isn: [None; 2],
                first_syn_from: None,
                closed: false,
                bytes: [0; 2],
                segs: Vec::new(),
            });
            by_tuple.insert(tuple, conns.len() - 1);
            conns.len() - 1
        }
    };
    let c = &mut conns[i];
    let side = usize::from(c.a != from);
    if s.syn() {
        c.isn[side] = Some(s.seq);
        c.first_syn_from.get_or_insert(side);
    }
    if s.fin() || s.rst() {
        c.closed = true;
    }
    c.bytes[side] += s.payload_len as u64;
    c.segs.push(Kept {
        time,
        from_a: side == 0,
        seq: s.seq,
        ack: s.ack,
        len: s.payload_len,
        flags: s.flags,
        mss: s.mss.unwrap_or(0),
        sack_permitted: s.sack_permitted,
        sack_blocks: s.sack_blocks.len().min(u8::MAX as usize) as u8,
        timestamps: s.timestamps,
    });
}

/// Runs connection `c`'s segments through the detector, side `sender` being the data sender.
fn feed(detector: &mut Detector, key: u64, c: &Conn, sender: usize) {
    use crate::wire::pcap_read::{TCP_ACK, TCP_FIN, TCP_SYN};
    let from_sender_side = |k: &Kept| usize::from(!k.from_a) == sender;
    // The sender's sequence space (its data, the receiver's ACKs) and the receiver's.
    let first_data = c.segs.iter().find(|k| from_sender_side(k)).map(|k| k.seq);
    let first_ack = c
        .segs
        .iter()
        .find(|k| !from_sender_side(k) && k.flags & TCP_ACK != 0)
        .map(|k| k.ack);
    let mut data_space = Unwrap::new(first_data.or(first_ack).unwrap_or(0));
    let first_rev = c.segs.iter().find(|k| !from_sender_side(k)).map(|k| k.seq);
    let mut rev_space = Unwrap::new(first_rev.unwrap_or(0));
    // Sender-side round trips from TCP timestamps: when each of the receiver's TSvals first
    // passed here, and the sender's first segment echoing it.
    let mut ts_seen: std::collections::VecDeque<(u32, SimTime)> = Default::default();
    let mut last_echo: Option<u32> = None;
    for k in &c.segs {
        let from_sender = from_sender_side(k);
        if let Some((tsval, tsecr)) = k.timestamps {
            if !from_sender {
                if ts_seen.back().is_none_or(|&(v, _)| v != tsval) {
                    ts_seen.push_back((tsval, k.time));
                    if ts_seen.len() > 4096 {
                        ts_seen.pop_front();
                    }
                }
            } else if k.flags & TCP_SYN == 0 && k.len > 0 && last_echo != Some(tsecr) {
                last_echo = Some(tsecr);
                if let Some(&(_, at)) = ts_seen.iter().find(|&&(v, _)| v == tsecr) {
                    detector.round_trip_sample(key, k.time.saturating_sub(at));
                }
                // Older TSvals will not be echoed any more.
                while ts_seen.front().is_some_and(|&(v, _)| v != tsecr) {
                    ts_seen.pop_front();
                }
            }
        }
        let (seq, ack) = if from_sender {
            (data_space.at(k.seq), 0)
        } else {
            let seq = rev_space.at(k.seq);
            let ack = if k.flags & TCP_ACK != 0 {
                data_space.at(k.ack)
            } else {
                0
            };
            (seq, ack)
        };
        let seg = Segment {
            time: k.time,
            from_sender,
            seq,
            ack,
            len: k.len,
            syn: k.flags & TCP_SYN != 0,
            fin: k.flags & TCP_FIN != 0,
            ack_flag: k.flags & TCP_ACK != 0,
            sack_permitted: k.sack_permitted,
            sack_blocks: k.sack_blocks,
            mss: k.mss as u32,
        };
        detector.observe(key, &seg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::flavor::Flavor;
    use crate::wire::pcap_read::build::{ipv4_tcp, pcap};
    use crate::wire::pcap_read::{TCP_ACK, TCP_FIN, TCP_SYN};

    const C: [u8; 4] = [192, 168, 1, 10];
    const S: [u8; 4] = [192, 168, 1, 20];

    /// A transfer of `segments` full segments from `from` to `to` (the server, port 80, when
    /// `download`), each ACKed at once, after a handshake with SACK and MSS; sequence numbers
    /// from `isn`. Times 1 ms apart.
    fn transfer(isn: u32, segments: u32, download: bool, sport: u16) -> Vec<(u64, Vec<u8>, u32)> {
        let mss = 1000u32;
        let syn_opts = [2, 4, 0x03, 0xe8, 4, 2];
        let mut recs = Vec::new();
        let mut t = 0u64;
        let mut push = |f: Vec<u8>| {
            t += 1_000_000;
            let n = f.len() as u32;
            recs.push((t, f, n));
        };
        // The client opens; the data sender is the client (upload) or the server (download).
        push(ipv4_tcp(C, S, sport, 80, 5000, 0, TCP_SYN, &syn_opts, 0));
        push(ipv4_tcp(
            S,
            C,
            80,
            sport,
            isn.wrapping_sub(1),
            5001,
            TCP_SYN | TCP_ACK,
            &syn_opts,
            0,
        ));
        push(ipv4_tcp(C, S, sport, 80, 5001, isn, TCP_ACK, &[], 0));
        let (a, b, pa, pb) = if download {
            (S, C, 80, sport)
        } else {
            (C, S, sport, 80)
        };
        let base = if download { isn } else { 5001 };
        let other = if download { 5001 } else { isn };
        for i in 0..segments {
            let seq = base.wrapping_add(i * mss);
            push(ipv4_tcp(
                a,
                b,
                pa,
                pb,
                seq,
                other,
                TCP_ACK,
                &[],
                mss as usize,
            ));
            push(ipv4_tcp(
                b,
                a,
                pb,
                pa,
                other,
                seq.wrapping_add(mss),
                TCP_ACK,
                &[],
                0,
            ));
        }
        let end = base.wrapping_add(segments * mss);
        push(ipv4_tcp(
            a,
            b,
            pa,
            pb,
            end,
            other,
            TCP_FIN | TCP_ACK,
            &[],
            0,
        ));
        recs
    }

    #[test]
    fn the_side_sending_more_payload_is_the_sender_of_a_download() {
        let file = pcap(101, false, true, 65535, &transfer(7, 50, true, 40001));
        let c = detect_flavors(&file).unwrap();
        assert_eq!(c.connections.len(), 1);
        let k = &c.connections[0];
        assert_eq!((k.src.to_string().as_str(), k.sport), ("192.168.1.20", 80));
        assert_eq!(
            (k.dst.to_string().as_str(), k.dport),
            ("192.168.1.10", 40001)
        );
        assert_eq!(k.data_bytes, 50_000);
        assert_eq!(k.packets, 3 + 100 + 1);
        assert!(k.detection.sack, "both SYNs offered SACK");
        assert_eq!(c.tcp_segments, 104);
    }

    #[test]
    fn sequence_numbers_crossing_two_to_the_32_stay_one_increasing_stream() {
        // The ISN 20 kB below the wrap: the transfer of 100 kB crosses it.
        let file = pcap(
            101,
            false,
            true,
            65535,
            &transfer(u32::MAX - 20_000, 100, false, 40002),
        );
        let c = detect_flavors(&file).unwrap();
        assert_eq!(
            c.connections.len(),
            1,
            "the wrap did not split the connection"
        );
        let d = detector_of(&file).unwrap();
        let (ratios, _, _) = d.evidence(0).unwrap();
        assert!(ratios.is_empty(), "no loss seen in a clean transfer");
        assert_eq!(
            d.detection(0).unwrap().timeouts,
            0,
            "no retransmission seen across the wrap"
        );
        let (t, w) = d.last_window(0).unwrap();
        assert!(
            t.as_secs_f64() > 0.1 && (1.0..=2.0).contains(&w),
            "window {w} at {t}"
        );
        let mut u = Unwrap::new(u32::MAX - 5);
        assert_eq!(u.at(u32::MAX), (1 << 32) + 5);
        assert_eq!(u.at(10), (1 << 32) + 16);
        assert_eq!(u.at(4), (1 << 32) + 10, "a step back stays a step back");
    }

    #[test]
    fn a_new_syn_on_the_same_ports_starts_a_new_connection() {
        let mut recs = transfer(1000, 5, false, 40003);
        let later = transfer(900_000, 8, false, 40003);
        let t_end = recs.last().unwrap().0;
        recs.extend(later.into_iter().map(|(t, f, n)| (t + t_end, f, n)));
        let c = detect_flavors(&pcap(1 + 100, false, true, 65535, &recs)).unwrap();
        assert_eq!(c.connections.len(), 2);
        assert_eq!(c.connections[0].data_bytes, 5000);
        assert_eq!(c.connections[1].data_bytes, 8000);
        assert!(c.connections[0].last_s <= c.connections[1].first_s);
    }

    #[test]
    fn a_capture_without_tcp_has_no_connections_and_a_damaged_one_is_an_error() {
        let udp = {
            let mut p = ipv4_tcp(C, S, 1, 2, 3, 4, 0, &[], 0);
            p[9] = 17;
            p
        };
        let n = udp.len() as u32;
        let c = detect_flavors(&pcap(101, false, false, 65535, &[(0, udp, n)])).unwrap();
        assert!(c.connections.is_empty());
        assert_eq!(c.records, 1);
        let file = pcap(101, false, true, 65535, &transfer(7, 3, false, 40004));
        let e = detect_flavors(&file[..file.len() - 3]).unwrap_err();
        assert!(e.to_string().starts_with("truncated capture"), "{e}");
        assert_eq!(Flavor::Unknown.name(), "unknown");
    }
}
