//! Replays what the `pcap` fuzz target (`fuzz/fuzz_targets/pcap.rs`) keeps in
//! `fuzz/regressions/pcap/` with the target's checks, and mutates the shipped Linux captures
//! byte by byte (a fixed seed, `XLAYER_FUZZ_MUTANTS` per file): every input reads into
//! connections or fails with a `PcapError`, never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use xlayer_core::transport::flavor_capture::detect_flavors;

/// What the fuzz target checks of one input.
fn check_like_the_fuzz_target(data: &[u8]) {
    if let Ok(c) = detect_flavors(data) {
        let packets: u64 = c.connections.iter().map(|k| k.packets).sum();
        assert_eq!(packets, c.tcp_segments);
        assert!(c.tcp_segments + c.short_records <= c.records);
        for k in &c.connections {
            assert!((0.0..=1.0).contains(&k.detection.confidence));
            assert!(k.first_s <= k.last_s);
        }
    }
}

#[test]
fn inputs_the_pcap_fuzzer_kept_read_or_fail_with_an_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pcap");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions/pcap/")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in &files {
        let bytes = std::fs::read(path).expect("read regression input");
        if catch_unwind(AssertUnwindSafe(|| check_like_the_fuzz_target(&bytes))).is_err() {
            panic!("{} fails again", path.display());
        }
    }
}

/// A small xorshift generator: the mutants are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn byte_mutants_of_a_real_capture_read_or_fail_with_an_error() {
    // The uncompressed capture the seeds script writes is not shipped; build one from a
    // regression input that is a whole capture, and mutate it.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pcap");
    let base = std::fs::read(dir.join("linux-bbr-sack-receiver-40-records.pcap"))
        .expect("a whole capture among the regression inputs");
    assert!(detect_flavors(&base).is_ok(), "the base capture reads");
    let mutants: usize = std::env::var("XLAYER_FUZZ_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..mutants {
        let mut m = base.clone();
        for _ in 0..1 + rng.next() % 4 {
            let at = (rng.next() as usize) % m.len();
            match rng.next() % 4 {
                0 => m[at] = rng.next() as u8,
                1 => m[at] ^= 1 << (rng.next() % 8),
                2 => m.truncate(at),
                _ => m[at] = [0, 0xff, 0x7f, 0x80][(rng.next() % 4) as usize],
            }
            if m.is_empty() {
                break;
            }
        }
        if catch_unwind(AssertUnwindSafe(|| check_like_the_fuzz_target(&m))).is_err() {
            panic!("mutant {i} of the base capture panics");
        }
    }
}
