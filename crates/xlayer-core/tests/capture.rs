//! Captures (`output.pcap`): streamed into the sinks the caller attaches, with radiotap headers
//! whose numbers are known without the simulator on a one-hop `propagation = "range"` link
//! (every node in range receives the transmit power itself, so signal, noise and SINR are
//! `tx_power_dbm`, thermal noise and their difference), QoS Data with the level as TID over
//! EDCA, the node selection and snap length, write errors reported rather than panicking, and
//! results unchanged by capturing.

use std::io::{self, Write};

use xlayer_core::metrics::pcap::SharedBuffer;
use xlayer_core::wire::frame::crc32;
use xlayer_core::Simulation;

/// Two 802.11b nodes 50 m apart at 11 Mbit/s (ACKs at 1), 3 dBm received whole, EDCA 802.11e,
/// a 200 kbit/s UDP flow of 500-byte datagrams at level 2 from node 0 to node 1.
fn one_hop(output: &str) -> String {
    format!(
        "duration_s = 1.0\nseed = 3\n\
         [radio]\nstandard = \"802.11b\"\ndata_rate_mbps = 11.0\nbasic_rate_mbps = 1.0\n\
         propagation = \"range\"\ntx_range_m = 100.0\ntx_power_dbm = 3.0\n\
         [mac]\naccess = \"802.11e\"\n\
         [topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 50.0\n\
         [[flows]]\nsrc = 0\ndst = 1\nrate_bps = 200e3\npayload_bytes = 500\npriority = 2\n\
         [output]\npcap = true\n{output}"
    )
}

struct Record {
    t_ns: u64,
    orig_len: usize,
    data: Vec<u8>,
}

fn records(bytes: &[u8]) -> (u32, u32, Vec<Record>) {
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!(u32_at(0), 0xa1b2_3c4d, "nanosecond pcap");
    let (snaplen, linktype) = (u32_at(16), u32_at(20));
    let mut out = Vec::new();
    let mut i = 24;
    while i < bytes.len() {
        let incl = u32_at(i + 8) as usize;
        out.push(Record {
            t_ns: u32_at(i) as u64 * 1_000_000_000 + u32_at(i + 4) as u64,
            orig_len: u32_at(i + 12) as usize,
            data: bytes[i + 16..i + 16 + incl].to_vec(),
        });
        i += 16 + incl;
    }
    (snaplen, linktype, out)
}

fn capture(toml: &str, nodes: &[u32]) -> (Simulation, Vec<SharedBuffer>) {
    let mut sim = Simulation::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let bufs: Vec<SharedBuffer> = nodes.iter().map(|_| SharedBuffer::default()).collect();
    for (&n, b) in nodes.iter().zip(&bufs) {
        sim.attach_capture(n, Box::new(b.clone())).unwrap();
    }
    sim.run();
    sim.close_captures().unwrap();
    (sim, bufs)
}

#[test]
fn received_frames_carry_rate_signal_noise_sinr_and_channel_and_sent_ones_the_tx_power() {
    let (_, bufs) = capture(&one_hop(""), &[0, 1]);
    // Thermal noise over 802.11b's 22 MHz with a 7 dB noise figure: -93.58 dBm.
    let noise_dbm = -174.0 + 10.0 * 22e6f64.log10() + 7.0;
    let (snaplen, linktype, rx) = records(&bufs[1].bytes());
    assert_eq!((snaplen, linktype), (65535, 127));
    let data: Vec<&Record> = rx.iter().filter(|r| r.data[28] == 0x88).collect();
    assert!(data.len() > 40, "about 50 datagrams in 1 s: {}", data.len());
    for r in &data {
        let h = &r.data;
        assert_eq!(
            u16::from_le_bytes([h[2], h[3]]),
            28,
            "received: 28-byte radiotap"
        );
        assert_eq!(h[12], 0x10, "FCS at end");
        assert_eq!(h[13], 22, "11 Mbit/s");
        assert_eq!(u16::from_le_bytes([h[14], h[15]]), 2412);
        assert_eq!(u16::from_le_bytes([h[16], h[17]]), 0x00a0, "2 GHz, CCK");
        assert_eq!(h[18] as i8, 3, "received at the transmit power");
        assert_eq!(h[19] as i8, noise_dbm.round() as i8);
        assert_eq!(&h[20..24], &[0x02, 0x58, 0x4c, 0]);
        let sinr = i16::from_le_bytes([h[26], h[27]]) as f64 / 100.0;
        assert!((sinr - (3.0 - noise_dbm)).abs() < 0.006, "SINR {sinr}");
        // QoS Data, TID 2 (the flow's level), Normal Ack; the FCS checks.
        let frame = &h[28..];
        assert_eq!(frame[24], 2);
        let n = frame.len();
        assert_eq!(crc32(&frame[..n - 4]).to_le_bytes(), frame[n - 4..]);
        assert_eq!(r.orig_len, h.len());
    }
    // Node 0 sends the data frames: 15-byte radiotap with the 3 dBm transmit power.
    let (_, _, tx) = records(&bufs[0].bytes());
    let sent: Vec<&Record> = tx.iter().filter(|r| r.data[15] == 0x88).collect();
    assert_eq!(sent.len(), data.len(), "every frame sent was received");
    assert_eq!(
        u32::from_le_bytes(sent[0].data[4..8].try_into().unwrap()),
        0x40e
    );
    assert_eq!(sent[0].data[14] as i8, 3);
    // ACKs from node 1 at the basic rate, received by node 0.
    let acks: Vec<&Record> = tx.iter().filter(|r| r.data[28] == 0xd4).collect();
    assert!(
        !acks.is_empty() && acks.iter().all(|r| r.data[13] == 2),
        "ACKs at 1 Mbit/s"
    );
    let times: Vec<u64> = tx.iter().map(|r| r.t_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
}

#[test]
fn a_single_level_mac_writes_plain_data_frames() {
    let (_, bufs) = capture(
        &one_hop("")
            .replace("access = \"802.11e\"", "access = \"dcf\"")
            .replace("priority = 2\n", ""),
        &[1],
    );
    let (_, _, rx) = records(&bufs[0].bytes());
    assert!(rx.iter().any(|r| r.data[28] == 0x08), "Data, subtype 0");
    assert!(!rx.iter().any(|r| r.data[28] == 0x88));
}

#[test]
fn the_snap_length_cuts_records_and_only_selected_nodes_are_captured() {
    let mut sim = Simulation::from_toml(&one_hop("pcap_nodes = [1]\npcap_snaplen = 60\n")).unwrap();
    assert_eq!(sim.captured_nodes(), vec![1]);
    let e = sim
        .attach_capture(0, Box::new(SharedBuffer::default()))
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("output.pcap_nodes: node 0 is not captured"),
        "{e}"
    );
    let buf = SharedBuffer::default();
    sim.attach_capture(1, Box::new(buf.clone())).unwrap();
    sim.run_until(0.5);
    let late = sim
        .attach_capture(1, Box::new(SharedBuffer::default()))
        .unwrap_err();
    assert!(late.to_string().contains("before the run starts"), "{late}");
    sim.run();
    sim.close_captures().unwrap();
    let (snaplen, _, recs) = records(&buf.bytes());
    assert_eq!(snaplen, 60);
    let data: Vec<&Record> = recs.iter().filter(|r| r.orig_len > 60).collect();
    assert!(!data.is_empty());
    for r in data {
        assert_eq!(r.data.len(), 60);
        assert_eq!(
            r.orig_len,
            28 + 26 + 8 + 528 + 4,
            "radiotap, QoS header, LLC, IP, FCS"
        );
    }
}

#[test]
fn capture_options_are_validated_with_errors_naming_the_field() {
    for (output, want) in [
        (
            "pcap_nodes = [0, 5]",
            "output.pcap_nodes[1]: node 5 does not exist",
        ),
        (
            "pcap_nodes = [1, 1]",
            "output.pcap_nodes[1]: node 1 is listed twice",
        ),
        ("pcap_nodes = []", "output.pcap_nodes: empty"),
        (
            "pcap_snaplen = 27",
            "output.pcap_snaplen: must be between 28",
        ),
        (
            "pcap_snaplen = 262145",
            "output.pcap_snaplen: must be between 28",
        ),
        ("pcap_snaplen = -1", "output.pcap_snaplen"),
        ("pcap_nodes = 3", "output.pcap_nodes"),
    ] {
        let e = Simulation::from_toml(&one_hop(output))
            .err()
            .unwrap_or_else(|| panic!("{output} accepted"));
        assert!(e.to_string().starts_with(want), "{output}: {e}");
    }
    let off = one_hop("").replace("pcap = true", "pcap = false");
    let mut sim = Simulation::from_toml(&off).unwrap();
    assert!(sim.captured_nodes().is_empty());
    let e = sim
        .attach_capture(0, Box::new(SharedBuffer::default()))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("output.pcap: captures are off"),
        "{e}"
    );
}

/// A sink that takes `room` bytes, then fails as a full disk does.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_disk_stops_the_capture_with_an_error_naming_the_node_and_the_run_goes_on() {
    let mut sim = Simulation::from_toml(&one_hop("")).unwrap();
    sim.attach_capture(1, Box::new(Full { room: 1000 }))
        .unwrap();
    assert!(!sim.capture_failed());
    sim.run();
    assert!(sim.capture_failed());
    let e = sim.flush_captures().unwrap_err();
    assert_eq!(e.node, 1);
    assert_eq!(e.error.raw_os_error(), Some(28));
    assert!(
        e.to_string()
            .starts_with("cannot write the pcap capture of node 1: "),
        "{e}"
    );
    assert_eq!(sim.now_s(), 1.0, "the run reached its end");
}

#[test]
fn capturing_changes_no_result() {
    let text = one_hop("");
    let (with, _) = capture(&text, &[0, 1]);
    let mut without = Simulation::from_toml(&text.replace("pcap = true", "pcap = false")).unwrap();
    without.run();
    let (a, b) = (with.results(), without.results());
    let strip = |rows: &[xlayer_core::Row]| format!("{rows:?}");
    assert_eq!(strip(&a.flows), strip(&b.flows));
    assert_eq!(strip(&a.nodes), strip(&b.nodes));
    assert_eq!(with.events(), without.events());
}
