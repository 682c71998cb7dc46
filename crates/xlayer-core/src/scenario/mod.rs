//! Scenario description: the serde schema of a scenario file, its defaults, and validation.
//!
//! A scenario arrives as TOML text or as JSON text (what the Python API sends for a dict).
//! Unknown fields are rejected; every error names the field path (`radio.data_rate_mbps`) and
//! what is allowed. [`Scenario::validate`] checks values that serde cannot (ranges, references
//! between fields). Building the network from a validated scenario is `crate::builder`.
//!
//! Every field is documented with its default and unit in `docs/scenario.md`; keep both in step.
//!
//! One module per section of the file, each with its serde types and their validation: `radio`,
//! `mac`, `net`, `stack` (presets and their options), `topology`, `flows` (`[[flows]]` and
//! `[flows_random]`), `events` (`[link_loss]` and `[[events]]`), `noise` (`[[noise]]`),
//! `optimizers`, `output`.
//! `schema` holds the top-level [`Scenario`] and the order in which the sections are checked;
//! `check` the helpers they share. Every public item is re-exported here, as `scenario::X`.

mod check;
mod events;
mod flows;
mod mac;
mod net;
mod noise;
mod optimizers;
mod output;
mod radio;
mod schema;
mod stack;
mod topology;
mod wired;
pub use events::*;
pub use flows::*;
pub use mac::*;
pub use net::*;
pub use noise::*;
pub use optimizers::*;
pub use output::*;
pub use radio::*;
pub use schema::*;
pub use stack::*;
pub use topology::*;
pub use wired::*;

use crate::error::XlError;

impl Scenario {
    /// Parses TOML text. Errors carry the field path and the parser's message.
    pub fn from_toml(text: &str) -> Result<Scenario, XlError> {
        let de = toml::Deserializer::new(text);
        let sc: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().clone();
            let inner = e.into_inner();
            let msg = inner.message().to_string();
            let loc = inner
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            let root = toml::from_str::<toml::Value>(text)
                .ok()
                .and_then(|v| serde_json::to_value(v).ok());
            let msg = with_allowed_names(root, &path, msg);
            XlError::scenario(field_or_root(&path.to_string()), format!("{msg}{loc}"))
        })?;
        sc.validate()
    }

    /// Parses JSON text (the form the Python API uses for dicts).
    pub fn from_json(text: &str) -> Result<Scenario, XlError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let sc: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().clone();
            let msg = e.into_inner().to_string();
            // serde_json appends " at line L column C" which refers to generated JSON: drop it.
            let msg = match msg.find(" at line ") {
                Some(i) => msg[..i].to_string(),
                None => msg,
            };
            let msg = with_allowed_names(serde_json::from_str(text).ok(), &path, msg);
            XlError::scenario(field_or_root(&path.to_string()), msg)
        })?;
        // Only whitespace may follow the scenario's object (serde_json's `from_str` checks
        // this; a `Deserializer` checks it only when asked).
        de.end().map_err(|e| {
            let msg = e.to_string();
            let msg = match msg.find(" at line ") {
                Some(i) => &msg[..i],
                None => &msg,
            };
            XlError::scenario(
                "scenario",
                format!("{msg} after the scenario's JSON object"),
            )
        })?;
        sc.validate()
    }

    /// The scenario as TOML, with every default filled in (what `--out` writes as `scenario.toml`).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a validated scenario always serializes")
    }

    /// The scenario as JSON, with every default filled in.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a validated scenario always serializes")
    }
}

/// `msg`, or, when the failing field at `path` takes one of a fixed set of names and the
/// scenario (`root`, as JSON) gave it a value of another type (a number, a table), the names
/// it accepts: serde then reports only the type it wanted ("wanted string or table", or
/// serde_json's "expected value"). The value is replaced by a name no field accepts and the
/// scenario deserialized again; serde's "unknown variant" message lists the names. A field that
/// already holds a string keeps its message (it lists the names). Runs only on the error path.
fn with_allowed_names(
    root: Option<serde_json::Value>,
    path: &serde_path_to_error::Path,
    msg: String,
) -> String {
    if msg.starts_with("unknown field") {
        // The probe below would find the field's name refused again and call it a wrong type.
        return with_closest_name(msg);
    }
    match root.and_then(|root| allowed_names(root, path)) {
        Some(names) => format!("wrong type: expected one of {names}"),
        None => msg,
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`, ..." with the closest accepted name
/// put first ("did you mean `a`?") when one is close to `x`: a Damerau-Levenshtein distance of
/// at most a third of the longer name's length, within 1..=3 edits (a typo, a swapped pair of
/// letters). Other messages are returned unchanged.
fn with_closest_name(msg: String) -> String {
    let names = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let Some((head, expected)) = msg.split_once(", expected one of ") else {
        return msg;
    };
    let (Some(unknown), candidates) = (names(head).into_iter().next(), names(expected)) else {
        return msg;
    };
    let best = candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(&unknown, c), c))
        .min_by_key(|&(d, _)| d);
    match best {
        Some((d, c)) if d <= (unknown.len().max(c.len()) / 3).clamp(1, 3) => {
            format!("unknown field `{unknown}`: did you mean `{c}`? (expected one of {expected})")
        }
        _ => msg,
    }
}

/// The names listed by serde for the field at `path` of `probe` once its value is replaced by
/// a name no field accepts; `None` if it holds a string already or is not such a field.
fn allowed_names(mut probe: serde_json::Value, path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    const PROBE: &str = "\u{1}not-a-name";
    let mut v = &mut probe;
    for seg in path.iter() {
        v = match seg {
            Segment::Map { key } => v.get_mut(key.as_str())?,
            Segment::Seq { index } => v.get_mut(*index)?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    if v.is_string() {
        return None;
    }
    *v = serde_json::Value::String(PROBE.to_string());
    let err = serde_path_to_error::deserialize::<_, Scenario>(&probe).err()?;
    if err.path().to_string() != path.to_string() {
        return None;
    }
    let msg = err.into_inner().to_string();
    Some(msg.split_once("expected one of ")?.1.to_string())
}

fn field_or_root(path: &str) -> String {
    if path == "." || path.is_empty() {
        "scenario".to_string()
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_unknown_field_is_called_unknown_and_the_closest_name_offered_whatever_its_value() {
        for (text, field, want) in [
            (
                "duratoin_s = 5\n",
                "duratoin_s",
                "did you mean `duration_s`?",
            ),
            (
                "[radio]\nstandrd = \"802.11a\"\n",
                "radio.standrd",
                "did you mean `standard`?",
            ),
            (
                "[[flows]]\nsrc = 0\ndst = 1\nrat_bps = 5\n",
                "flows[0].rat_bps",
                "did you mean `rate_bps`?",
            ),
        ] {
            let err = Scenario::from_toml(text).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
            assert!(err.contains("unknown field"), "{err}");
            assert!(err.contains(want), "{err}");
            assert!(!err.contains("wrong type"), "{err}");
        }
        let json = Scenario::from_json(r#"{"duratoin_s": 5}"#)
            .unwrap_err()
            .to_string();
        assert!(
            json.contains("unknown field `duratoin_s`: did you mean `duration_s`?"),
            "{json}"
        );
        // Nothing close: no guess, the accepted names only.
        let far = Scenario::from_toml("zzzzzz = 1\n").unwrap_err().to_string();
        assert!(
            far.contains("unknown field `zzzzzz`, expected one of"),
            "{far}"
        );
    }
    use super::*;

    #[test]
    fn json_with_text_after_the_scenario_object_is_refused() {
        let e = Scenario::from_json(r#"{"duration_s": 2.0} 05, "x": 1"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "scenario: trailing characters after the scenario's JSON object"
        );
        assert!(Scenario::from_json("{\"duration_s\": 2.0}\n  ").is_ok());
    }

    #[test]
    fn json_floats_parse_to_the_nearest_double_so_the_normal_form_is_stable() {
        // 17 significant digits: serde_json's default parser read this 1 ulp off.
        let sc = Scenario::from_json(r#"{"duration_s": 30.066666666666663}"#).unwrap();
        assert_eq!(sc.duration_s, 30.066666666666663);
        assert_eq!(
            sc.duration_s.to_bits(),
            "30.066666666666663".parse::<f64>().unwrap().to_bits()
        );
        let again = Scenario::from_json(&sc.to_json()).unwrap();
        assert_eq!(again.to_json(), sc.to_json());
    }

    #[test]
    fn minimal_scenario_gets_defaults() {
        let sc = Scenario::from_toml("[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n[[flows]]\nsrc = 0\ndst = 1\n").unwrap();
        assert_eq!(sc.radio.standard, Standard::Dot11b);
        assert_eq!(sc.radio.data_rate(), 11.0);
        assert_eq!(sc.flows[0].payload_bytes, 1000);
    }

    #[test]
    fn unknown_field_is_named() {
        let err = Scenario::from_toml("[radio]\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("radio") && err.contains("bogus"), "{err}");
    }

    #[test]
    fn a_name_field_given_a_number_lists_the_names_it_accepts() {
        let t = "[radio]\npropagation = 2\n[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n";
        let err = Scenario::from_toml(t).unwrap_err().to_string();
        assert!(
            err.contains("radio.propagation") && err.contains("`two_ray_ground`"),
            "{err}"
        );
        // The JSON path (Python dicts) says the same (serde_json alone says "expected value").
        let j = r#"{"radio": {"propagation": 2},
                    "topology": {"kind": "chain", "count": 2, "spacing_m": 100.0}}"#;
        let err = Scenario::from_json(j).unwrap_err().to_string();
        assert!(
            err.contains("radio.propagation") && err.contains("`two_ray_ground`"),
            "{err}"
        );
        // A wrong type inside a list is found by its index.
        let j = r#"{"topology": {"kind": "chain", "count": 2, "spacing_m": 100.0},
                    "flows": [{"src": 0, "dst": 1}, {"src": 1, "dst": 0, "transport": 3}]}"#;
        let err = Scenario::from_json(j).unwrap_err().to_string();
        assert!(
            err.contains("flows[1].transport") && err.contains("string"),
            "{err}"
        );
        // A field that takes any string keeps serde's message.
        let t = "name = 5\n[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n";
        let err = Scenario::from_toml(t).unwrap_err().to_string();
        assert!(err.contains("name") && err.contains("string"), "{err}");
    }

    #[test]
    fn negative_rate_is_rejected_with_field() {
        let t = "[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n[[flows]]\nsrc = 0\ndst = 1\nrate_bps = -5.0\n";
        let err = Scenario::from_toml(t).unwrap_err().to_string();
        assert!(err.contains("flows[0].rate_bps"), "{err}");
    }

    #[test]
    fn flow_to_missing_node_is_rejected() {
        let t = "[topology]\nkind = \"chain\"\ncount = 2\nspacing_m = 100.0\n[[flows]]\nsrc = 0\ndst = 9\n";
        let err = Scenario::from_toml(t).unwrap_err().to_string();
        assert!(err.contains("flows[0].dst") && err.contains("9"), "{err}");
    }

    const CHAIN: &str = "[topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 200.0\n";

    /// The error `text` is refused with; panics if it is accepted.
    fn refused(text: &str) -> String {
        Scenario::from_toml(text).unwrap_err().to_string()
    }

    #[test]
    fn a_grid_too_large_to_count_is_refused_naming_topology_rows() {
        // 65536 × 65536 overflowed the node count (a panic, or a wrapped count of 0).
        let err =
            refused("[topology]\nkind = \"grid\"\nrows = 65536\ncols = 65536\nspacing_m = 10.0\n");
        assert!(
            err.contains("topology.rows") && err.contains("4294967296"),
            "{err}"
        );
        let err = refused("[topology]\nkind = \"chain\"\ncount = 200000\nspacing_m = 10.0\n");
        assert!(
            err.contains("topology.count") && err.contains("100000"),
            "{err}"
        );
    }

    #[test]
    fn a_flow_faster_than_a_packet_per_microsecond_is_refused_naming_its_rate() {
        // 1e12 bit/s of 1000-byte packets is 1.25e8 packets per simulated second: never ends.
        let flow = "[[flows]]\nsrc = 0\ndst = 2\npayload_bytes = 1000\n";
        let err = refused(&format!("{CHAIN}{flow}rate_bps = 1e12\n"));
        assert!(
            err.contains("flows[0].rate_bps") && err.contains("microsecond"),
            "{err}"
        );
        let err = refused(&format!(
            "{CHAIN}[flows_random]\ncount = 2\nrate_bps = 1e300\n"
        ));
        assert!(err.contains("flows_random.rate_bps"), "{err}");
        // One packet per microsecond exactly is allowed.
        Scenario::from_toml(&format!("{CHAIN}{flow}rate_bps = 8e9\n")).unwrap();
    }

    #[test]
    fn more_than_100000_random_flows_are_refused_naming_flows_random_count() {
        // 2^32 - 1 random flows exhausted memory while the pairs were drawn.
        let err = refused(&format!("{CHAIN}[flows_random]\ncount = 4294967295\n"));
        assert!(
            err.contains("flows_random.count") && err.contains("100000"),
            "{err}"
        );
    }

    #[test]
    fn olsr_beyond_5000_nodes_is_refused_naming_net_routing() {
        // 100 000 OLSR nodes asked for 410 GB of routing tables: an out-of-memory abort.
        let err = refused(
            "[net]\nrouting = \"olsr\"\n[topology]\nkind = \"chain\"\ncount = 100000\nspacing_m = 200.0\n",
        );
        assert!(err.contains("net.routing") && err.contains("5000"), "{err}");
    }

    #[test]
    fn an_unbounded_mac_queue_is_refused_naming_mac_queue_packets() {
        // A saturating source fills its queue at once: 2^32 - 1 packets exhausted memory.
        let err = refused(&format!("{CHAIN}[mac]\nqueue_packets = 4294967295\n"));
        assert!(
            err.contains("mac.queue_packets") && err.contains("65535"),
            "{err}"
        );
        Scenario::from_toml(&format!("{CHAIN}[mac]\nqueue_packets = 65535\n")).unwrap();
    }

    #[test]
    fn routing_periods_below_a_microsecond_are_refused_naming_the_field() {
        // 1e-12 s rounds to 0 ns: the jittered period panicked drawing from an empty range.
        // A 0 ns DSDV update period re-armed itself at the same instant for ever.
        for (routing, table, field) in [
            ("olsr", "etx", "probe_period_s"),
            ("olsr", "olsr", "tc_interval_s"),
            ("dsdv", "dsdv", "update_interval_s"),
        ] {
            let err = refused(&format!(
                "{CHAIN}[net]\nrouting = \"{routing}\"\n[net.{table}]\n{field} = 1e-12\n"
            ));
            assert!(err.contains(&format!("net.{table}.{field}")), "{err}");
        }
    }

    #[test]
    fn a_duration_beyond_the_engines_clock_is_refused_naming_duration_s() {
        for d in ["1e12", "1e300"] {
            let err = refused(&format!("duration_s = {d}\n{CHAIN}"));
            assert!(err.contains("duration_s") && err.contains("1e9"), "{err}");
        }
    }

    #[test]
    fn nodes_astronomically_far_apart_build_without_overflow() {
        // Neighbour cells of coordinates near 1e300 m overflowed their i64 index.
        let text = "[topology]\nkind = \"chain\"\ncount = 3\nspacing_m = 1e300\n";
        let err = crate::Simulation::from_toml(&format!("{text}[[flows]]\nsrc = 0\ndst = 1\n"))
            .err()
            .expect("no node reaches another")
            .to_string();
        assert!(err.contains("flows[0]"), "{err}");
        crate::Simulation::from_toml(text).unwrap();
    }

    #[test]
    fn a_network_too_dense_to_hold_is_a_topology_error_not_an_abort() {
        // 100 000 nodes in 1 m^2 were 10^10 links: the process aborted out of memory.
        let text = "[topology]\nkind = \"random\"\ncount = 4000\nwidth_m = 1.0\nheight_m = 1.0\n";
        let err = crate::Simulation::from_toml(text).err().expect("too dense");
        assert!(matches!(err, crate::XlError::Topology { .. }), "{err}");
        assert!(err.to_string().contains("topology"), "{err}");
    }

    #[test]
    fn a_radio_threshold_of_no_power_is_refused_naming_the_field_that_set_it() {
        // A 0 mW carrier-sense threshold kept the medium busy for ever (ZMAC+ then never left
        // the instant); a NaN reception threshold surfaced as an unreachable destination.
        for (radio, field) in [
            ("tx_range_m = 250.0\ncs_range_m = 1e300", "radio.cs_range_m"),
            ("cs_threshold_dbm = -1e18", "radio.cs_threshold_dbm"),
            ("rx_threshold_dbm = nan", "radio.rx_threshold_dbm"),
            ("tx_range_m = 1e300", "radio.tx_range_m"),
        ] {
            let text = format!("{CHAIN}[mac]\naccess = \"zmacplus\"\n[radio]\n{radio}\n");
            let err = crate::Simulation::from_toml(&text)
                .err()
                .expect(field)
                .to_string();
            assert!(err.contains(field) && err.contains("0 mW"), "{err}");
        }
    }

    #[test]
    fn toml_round_trip_is_stable() {
        let sc = Scenario::from_toml(
            "[topology]\nkind = \"grid\"\nrows = 2\ncols = 2\nspacing_m = 50.0\n",
        )
        .unwrap();
        let again = Scenario::from_toml(&sc.to_toml()).unwrap();
        assert_eq!(sc.to_toml(), again.to_toml());
        let j = Scenario::from_json(&sc.to_json()).unwrap();
        assert_eq!(sc.to_toml(), j.to_toml());
    }
}
