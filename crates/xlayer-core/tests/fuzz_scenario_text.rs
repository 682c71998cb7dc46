//! The scenario parser and validation never panic, whatever the text (issue 14): byte-level
//! mutants of every shipped scenario — bytes flipped, inserted, deleted, a line duplicated or a
//! stretch replaced by a nasty token — must parse into a scenario or fail with an error naming
//! something, never unwind. Mutants come from a fixed seed (`XLAYER_FUZZ_SEED`) and their number
//! from `XLAYER_FUZZ_MUTANTS` (default 2,000 a file), so a failure reproduces.
//!
//! This is a stable-toolchain fuzzer of our own; the coverage-guided one is `fuzz/` (cargo-fuzz,
//! run as the README says), and the inputs it found wrong are replayed here from
//! `fuzz/regressions/scenario/` with the same checks as its target. `tests/test_fuzz.py` fuzzes
//! the same files structurally through the Python API, building and running what validates.

use std::panic::{catch_unwind, AssertUnwindSafe};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlayer_core::Scenario;

const NASTY: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "18446744073709551616",
    "4294967296",
    "\"\"",
    "\"x\"",
    "[]",
    "{}",
    "[[",
    "]]",
    "=",
    "\n[radio]\n",
    "\n[[flows]]\n",
    "true",
    "1.5e-300",
    "\"802.11a\"",
    "\u{0}",
    "\u{feff}",
    "ä",
    "#",
    "'''",
    "\"\"\"",
];

fn mutate(rng: &mut Xoshiro256PlusPlus, text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..4) {
        let len = b.len().max(1);
        let at = rng.gen_range(0..len).min(b.len());
        match rng.gen_range(0..6) {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => b.insert(at, rng.gen_range(0x20..0x7f)),
            2 if !b.is_empty() => {
                let end = (at + rng.gen_range(1..16)).min(b.len());
                b.drain(at..end);
            }
            3 => {
                // Duplicate the line at `at`.
                let s = b[..at]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let e = b[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |i| at + i + 1);
                let line = b[s..e].to_vec();
                b.splice(e..e, line);
            }
            _ => {
                // Replace the token at `at` (up to the next space, newline or `=`) by a nasty one.
                let end = b[at..]
                    .iter()
                    .position(|&c| c == b' ' || c == b'\n' || c == b'=')
                    .map_or(b.len(), |i| at + i);
                let token = NASTY[rng.gen_range(0..NASTY.len())].as_bytes().to_vec();
                b.splice(at..end, token);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn mutated_scenario_text_parses_or_fails_with_an_error_never_a_panic() {
    let seed: u64 = std::env::var("XLAYER_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let per_file: usize = std::env::var("XLAYER_FUZZ_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut ok, mut errors) = (0usize, 0usize);
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read scenario");
        for i in 0..per_file {
            let mutant = mutate(&mut rng, &text);
            match catch_unwind(AssertUnwindSafe(|| Scenario::from_toml(&mutant))) {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    let msg = e.to_string();
                    assert!(
                        !msg.trim().is_empty(),
                        "{}: mutant {i}: an empty error",
                        path.display()
                    );
                    errors += 1;
                }
                Err(_) => panic!(
                    "{}: mutant {i} (seed {seed}) panicked the parser:\n{mutant}",
                    path.display()
                ),
            }
        }
    }
    println!(
        "{} files, {ok} mutants valid, {errors} refused",
        files.len()
    );
    assert!(
        ok > 0 && errors > 0,
        "the mutator should make both valid and invalid scenarios"
    );
}

/// What `fuzz/fuzz_targets/scenario.rs` checks of one input: TOML and JSON parsing give a
/// scenario or an error, and a scenario's normal forms parse back into themselves.
fn check_like_the_fuzz_target(text: &str) {
    for parsed in [Scenario::from_toml(text), Scenario::from_json(text)] {
        let Ok(sc) = parsed else { continue };
        let toml = sc.to_toml();
        let again = Scenario::from_toml(&toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
        assert_eq!(again.to_toml(), toml, "the TOML normal form is not stable");
        let json = sc.to_json();
        let again = Scenario::from_json(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(again.to_json(), json, "the JSON normal form is not stable");
    }
}

#[test]
fn inputs_the_coverage_guided_fuzzer_found_wrong_stay_fixed() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/scenario");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions/scenario/")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in &files {
        let bytes = std::fs::read(path).expect("read regression input");
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if catch_unwind(AssertUnwindSafe(|| check_like_the_fuzz_target(text))).is_err() {
            panic!("{} fails again", path.display());
        }
    }
}
