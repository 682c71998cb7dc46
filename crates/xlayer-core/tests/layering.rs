//! The core's layers import downward only (ARCHITECTURE.md, "Layout"): this test reads every
//! source file's `crate::` paths (`use` lines and inline paths, outside comments and test
//! modules) and fails on any reference from a module to one of a higher layer. With the layers
//! in a total order, that also rules out any import cycle between them.
//!
//! Order, lowest first: `error` and `sim` (the engine); `wire` (what travels); `metrics`
//! (counters and capture buffers the layers fill); `phy`, `mac`, `net`, `transport`, `app`; `xl`
//! (cross-layer data-path components); `tune` (tuning layers, optimizers); `scenario` (the
//! description of a run); `world` (node assembly, channel, run loop); `builder`; `oracle` (the optimum oracle's link model, read
//! from a built world); `results`
//! (reading the world out); the crate root.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const LAYERS: &[&[&str]] = &[
    &["error", "sim"],
    &["wire"],
    &["metrics"],
    &["phy"],
    &["mac"],
    &["net"],
    &["transport"],
    &["app"],
    &["xl"],
    &["tune"],
    &["scenario"],
    &["world"],
    &["builder"],
    &["oracle"],
    &["results"],
    &["lib"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files that are test modules (`#[cfg(test)] mod name;` in their parent).
fn test_module_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for f in files {
        let text = fs::read_to_string(f).expect("read source");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            if w[0] == "#[cfg(test)]" {
                if let Some(name) = w[1].strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    let dir = if f
                        .file_name()
                        .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
                    {
                        f.parent().unwrap().to_path_buf()
                    } else {
                        f.with_extension("")
                    };
                    tests.insert(dir.join(format!("{name}.rs")));
                }
            }
        }
    }
    tests
}

/// The code of a file without comments, string literals and its inline `#[cfg(test)]` module.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            // Skip the attribute's item: a `mod tests { ... }` block up to its closing brace.
            let mut depth = 0i32;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                opened |= l.contains('{');
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let mut s = line;
        if let Some(i) = s.find("//") {
            s = &s[..i];
        }
        // Drop string literals (error messages may mention paths).
        let mut in_str = false;
        for c in s.chars() {
            if c == '"' {
                in_str = !in_str;
            } else if !in_str {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The top-level modules a piece of code refers to through `crate::`.
fn referenced(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            // `use crate::{a, b}`: the names inside the braces.
            if let Some(body) = after.strip_prefix('{') {
                let end = body.find('}').unwrap_or(body.len());
                for part in body[..end].split(',') {
                    let n: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !n.is_empty() {
                        out.insert(n);
                    }
                }
            }
        } else {
            out.insert(name);
        }
        rest = after;
    }
    out
}

#[test]
fn layers_import_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let tests = test_module_files(&files);
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| !tests.contains(*f)) {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        let from = rank(&module).unwrap_or_else(|| {
            panic!(
                "src/{}: module `{module}` is in no layer of LAYERS",
                rel.display()
            )
        });
        let text = fs::read_to_string(f).expect("read source");
        for to in referenced(&code(&text)) {
            if to == module || to == "VERSION" {
                continue;
            }
            let Some(to_rank) = rank(&to) else {
                // A crate-root item (`crate::Simulation`, `crate::XlError`) is the root layer.
                if to.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    if from < rank("lib").unwrap() && to != "XlError" {
                        offenders.push(format!(
                            "src/{}: crate::{to} (the crate root)",
                            rel.display()
                        ));
                    }
                    continue;
                }
                panic!(
                    "src/{}: crate::{to} is in no layer of LAYERS",
                    rel.display()
                );
            };
            if to_rank > from {
                offenders.push(format!("src/{}: {module} -> {to}", rel.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "imports from a lower layer to a higher one:\n  {}",
        offenders.join("\n  ")
    );
}

#[test]
fn the_reader_sees_use_lines_inline_paths_and_brace_lists() {
    let text = "use crate::net::Packet;\nlet x = crate::tune::get(w);\nuse crate::{mac, phy::Phy};\n// crate::world in a comment\nlet s = \"crate::results\";\n#[cfg(test)]\nmod tests {\n    use crate::world::World;\n}\n";
    let got = referenced(&code(text));
    let want: BTreeSet<String> = ["net", "tune", "mac", "phy"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}
