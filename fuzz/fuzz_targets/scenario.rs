//! Fuzz target: scenario text (TOML, and the same bytes as JSON) through the parser and the
//! validation, `Scenario::from_toml` / `Scenario::from_json` — the functions behind every
//! scenario file, `--set` override and Python dict. Every input must give a scenario or an
//! error; a panic is a bug. A scenario that validates must also survive its own normal form:
//! `to_toml()` and `to_json()` parse back into a valid scenario with the same normal form, and
//! a small one (at most 300 nodes) builds into a network or fails with an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xlayer_core::Scenario;

fn check(sc: Scenario) {
    let toml = sc.to_toml();
    let again = Scenario::from_toml(&toml)
        .unwrap_or_else(|e| panic!("the normal form does not parse: {e}\n{toml}"));
    assert_eq!(again.to_toml(), toml, "the normal form is not stable");
    let json = sc.to_json();
    let again = Scenario::from_json(&json)
        .unwrap_or_else(|e| panic!("the JSON normal form does not parse: {e}\n{json}"));
    assert_eq!(again.to_json(), json, "the JSON normal form is not stable");
    if sc.node_count() <= 300 {
        let _ = xlayer_core::Simulation::new(sc);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sc) = Scenario::from_toml(text) {
        check(sc);
    }
    if let Ok(sc) = Scenario::from_json(text) {
        check(sc);
    }
});
