//! Scenario description: the serde schema of a scenario file, its defaults, and validation.
//!
//! A scenario arrives as TOML text or as JSON text (what the Python API sends for a dict).
//! Unknown fields are rejected; every error names the field path (`radio.data_rate_mbps`) and
//! what is allowed. [`Scenario::validate`] checks values that serde cannot (ranges, references
//! between fields). Building the network from a validated scenario is `crate::builder`.
//!
//! Every field is documented with its default and unit in `docs/scenario.md`; keep both in step.

mod schema;
pub use schema::*;

use crate::error::XlError;

impl Scenario {
    /// Parses TOML text. Errors carry the field path and the parser's message.
    pub fn from_toml(text: &str) -> Result<Scenario, XlError> {
        let de = toml::Deserializer::new(text);
        let sc: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.message().to_string();
            let loc = inner
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            XlError::scenario(field_or_root(&path), format!("{msg}{loc}"))
        })?;
        sc.validate()
    }

    /// Parses JSON text (the form the Python API uses for dicts).
    pub fn from_json(text: &str) -> Result<Scenario, XlError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let sc: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.into_inner().to_string();
            // serde_json appends " at line L column C" which refers to generated JSON: drop it.
            let msg = match msg.find(" at line ") {
                Some(i) => msg[..i].to_string(),
                None => msg,
            };
            XlError::scenario(field_or_root(&path), msg)
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

fn field_or_root(path: &str) -> String {
    if path == "." || path.is_empty() {
        "scenario".to_string()
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
