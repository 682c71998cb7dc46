//! Fuzz target: capture bytes through the pcap/pcapng reader, the frame decoders and the passive
//! flavor detector, `transport::flavor_capture::detect_flavors` — the function behind
//! `xlayer flavor FILE` and `xlayer.flavor(path)`. Every input must give connections or a
//! `PcapError`; a panic (an index out of range, an overflow, a time running backwards in the
//! detector's debug assertions) is a bug. What it returns must also hold together: the
//! connections' segments add up to at most the TCP segments read, every flavor has a name and
//! every confidence lies in [0, 1].

#![no_main]

use libfuzzer_sys::fuzz_target;
use xlayer_core::transport::flavor_capture::detect_flavors;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = detect_flavors(data) {
        let packets: u64 = c.connections.iter().map(|k| k.packets).sum();
        assert_eq!(packets, c.tcp_segments, "segments lost between reading and connections");
        assert!(c.tcp_segments + c.short_records <= c.records);
        for k in &c.connections {
            let conf = k.detection.confidence;
            assert!((0.0..=1.0).contains(&conf), "confidence {conf}");
            assert!(!k.detection.flavor.name().is_empty());
            assert!(k.first_s <= k.last_s);
        }
    }
});
