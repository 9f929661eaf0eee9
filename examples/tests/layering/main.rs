//! The layering of DESIGN.md section 2, checked on `cargo metadata`: dependencies point
//! down only, and products never depend on each other; inside each crate, no two
//! modules import each other, directly or around a cycle; and each crate's root exports
//! exactly what its section of `docs/ARCHITECTURE.md` lists.
#![cfg(test)]

mod exports;
mod modules;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const PRODUCTS: &[&str] = &[
    "job-hunter",
    "resume-coordinator",
    "page-explorer",
    "jd-optimizer",
    "job-agent-chat",
];
const MIDDLE: &[&str] = &["agent-server", "agent-backends", "job-capabilities"];

/// Layer of each library crate: a crate may depend only on crates of a lower layer.
fn layer(name: &str) -> Option<u8> {
    match name {
        "agent-llm" => Some(0),
        "agent-runtime" => Some(1),
        _ if MIDDLE.contains(&name) => Some(2),
        _ if PRODUCTS.contains(&name) => Some(3),
        "examples" | "xtask" => Some(4),
        _ => None,
    }
}

#[test]
fn workspace_dependencies_point_down_only() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap().to_owned();
        let normal_deps = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null() || d["kind"] == "build")
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .filter(|d| layer(d).is_some() && *d != name)
            .collect();
        graph.insert(name, normal_deps);
    }
    assert!(graph.contains_key("agent-llm"), "the workspace was read");
    let mut violations = Vec::new();
    for (package, deps) in &graph {
        let Some(own) = layer(package) else {
            violations.push(format!("{package} is not a crate of DESIGN.md section 2"));
            continue;
        };
        for dep in deps {
            let theirs = layer(dep).unwrap_or(u8::MAX);
            if theirs >= own && package != "examples" {
                violations.push(format!(
                    "{package} (layer {own}) depends on {dep} (layer {theirs})"
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "upward or sideways dependencies: {violations:#?}"
    );
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let crates = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates");
    let mut tangles = Vec::new();
    let mut read = 0;
    for entry in std::fs::read_dir(crates).unwrap() {
        let dir = entry.unwrap().path();
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let krate = dir.file_name().unwrap().to_string_lossy().into_owned();
        let graph = modules::imports(&src);
        read += graph.len();
        for group in modules::cycles(&graph) {
            let mut names: Vec<String> = group
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "lib".into()
                    } else {
                        m.join("::")
                    }
                })
                .collect();
            names.sort();
            tangles.push(format!("crates/{krate}: {}", names.join(", ")));
        }
    }
    assert!(read > 100, "the crates' modules were read ({read})");
    assert!(
        tangles.is_empty(),
        "modules in import cycles (break them: move what both need to a module below both):\n{}",
        tangles.join("\n")
    );
}

#[test]
fn every_crate_exports_at_its_root_exactly_what_architecture_lists() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let architecture = std::fs::read_to_string(format!("{root}/docs/ARCHITECTURE.md")).unwrap();
    let documented = exports::documented(&architecture);
    let mut differences = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(format!("{root}/crates")).unwrap() {
        let dir = entry.unwrap().path();
        let lib = dir.join("src/lib.rs");
        if !lib.is_file() {
            continue;
        }
        crates += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let exported = exports::root_exports(&lib);
        let Some(listed) = documented.get(&name) else {
            differences.push(format!(
                "crates/{name}: its section has no **Root exports**: line"
            ));
            continue;
        };
        let extra: Vec<&String> = exported.difference(listed).collect();
        let missing: Vec<&String> = listed.difference(&exported).collect();
        if !extra.is_empty() {
            differences.push(format!(
                "crates/{name} exports what ARCHITECTURE does not list: {extra:?}"
            ));
        }
        if !missing.is_empty() {
            differences.push(format!(
                "crates/{name} does not export what ARCHITECTURE lists: {missing:?}"
            ));
        }
    }
    assert!(crates >= 10, "the crates were read ({crates})");
    assert!(
        differences.is_empty(),
        "root exports and docs/ARCHITECTURE.md disagree (export less, or document it):\n{}",
        differences.join("\n")
    );
}
