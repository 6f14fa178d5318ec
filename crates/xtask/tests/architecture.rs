//! `docs/ARCHITECTURE.md`'s table of the dependencies between the crates is the workspace's:
//! every member named, each with exactly its normal dependencies on other members (optional
//! ones marked), as `cargo metadata` reads them from the manifests.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Crate → (dependency, optional) pairs.
type Graph = BTreeMap<String, Vec<(String, bool)>>;

/// The first word between backticks in `s`.
fn ticked(s: &str) -> Option<&str> {
    let (_, rest) = s.split_once('`')?;
    Some(rest.split_once('`')?.0)
}

/// The table under "Dependencies between the crates": `| `crate` | `dep`, `dep` (optional…) |`.
fn documented(doc: &str) -> Graph {
    let section = doc
        .split("### Dependencies between the crates")
        .nth(1)
        .expect("ARCHITECTURE.md has the dependency table");
    let mut g = Graph::new();
    for row in section.lines().skip_while(|l| !l.starts_with('|')) {
        let Some(cells) = row.strip_prefix('|') else {
            break;
        };
        let cells: Vec<&str> = cells.split('|').map(str::trim).collect();
        let (Some(name), Some(deps)) = (cells.first().and_then(|c| ticked(c)), cells.get(1)) else {
            continue;
        };
        let mut list: Vec<(String, bool)> = deps
            .split(',')
            .filter_map(|d| Some((ticked(d)?.to_owned(), d.contains("optional"))))
            .collect();
        list.sort();
        g.insert(name.to_owned(), list);
    }
    g
}

/// What `cargo ARGS` prints in `root`; panics with its errors if it fails.
fn cargo(root: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cargo {args:?} does not start: {e}"));
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The workspace's graph from `cargo metadata`.
fn actual(root: &Path) -> Graph {
    let out = cargo(
        root,
        &[
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ],
    );
    let m: serde_json::Value = serde_json::from_str(&out).expect("metadata is JSON");
    let packages = m["packages"].as_array().expect("packages");
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut g = Graph::new();
    for p in packages {
        let mut list: Vec<(String, bool)> = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| {
                let name = d["name"].as_str()?;
                members
                    .contains(&name)
                    .then(|| (name.to_owned(), d["optional"] == true))
            })
            .collect();
        list.sort();
        list.dedup();
        g.insert(p["name"].as_str().expect("a name").to_owned(), list);
    }
    g
}

#[test]
fn the_architecture_doc_names_every_crate_and_its_real_dependencies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("the doc");
    let (doc, real) = (documented(&doc), actual(&root));
    assert!(
        real.len() > 5,
        "cargo metadata lists the workspace: {real:?}"
    );
    let mut wrong = Vec::new();
    for (name, deps) in &real {
        match doc.get(name) {
            None => wrong.push(format!("{name} is missing from the table")),
            Some(d) if d != deps => wrong.push(format!(
                "{name}: the doc says {d:?}, the manifests {deps:?}"
            )),
            Some(_) => {}
        }
    }
    for name in doc.keys().filter(|n| !real.contains_key(*n)) {
        wrong.push(format!("{name} is in the table but not in the workspace"));
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md: {}",
        wrong.join("; ")
    );
}

#[test]
fn the_table_reader_takes_names_and_optional_marks() {
    let doc = "x\n### Dependencies between the crates\n\ntext\n\n| crate | depends on |\n|---|---|\n\
               | `a` | — |\n| `b` | `a`, `c` (optional, feature f) |\n\nafter | `z` | `y` |\n";
    let g = documented(doc);
    assert_eq!(g.len(), 2, "{g:?}");
    assert_eq!(g["a"], vec![]);
    assert_eq!(g["b"], vec![("a".into(), false), ("c".into(), true)]);
}

/// cg-send and cg-recv link the controllers without cg-cc's simulator and cg-link's emulator
/// (issue #40): nothing on their normal dependency paths asks for cg-cc's `sim` feature.
#[test]
fn the_programs_link_no_simulator_or_emulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for program in ["cg-sender", "cg-receiver"] {
        let tree = cargo(
            &root,
            &[
                "tree",
                "-e",
                "normal",
                "--prefix",
                "none",
                "--offline",
                "-p",
                program,
            ],
        );
        assert!(tree.contains("cg-cc "), "{program}'s tree: {tree}");
        assert!(
            !tree.contains("cg-link "),
            "{program} links cg-link's emulator:\n{tree}"
        );
    }
}

/// Every workspace crate lives in its own folder under `crates/` (issue #40): a folder's name
/// says what it holds, and nothing of the workspace sits beside `crates/` but docs.
#[test]
fn every_workspace_crate_lives_in_a_folder_of_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = cargo(
        &root,
        &[
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ],
    );
    let m: serde_json::Value = serde_json::from_str(&out).expect("metadata is JSON");
    let crates = Path::new(m["workspace_root"].as_str().expect("a root")).join("crates");
    let outside: Vec<&str> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["manifest_path"].as_str())
        .filter(|manifest| {
            Path::new(manifest)
                .parent()
                .and_then(Path::parent)
                .is_none_or(|folder| folder != crates)
        })
        .collect();
    assert!(outside.is_empty(), "crates outside crates/: {outside:?}");
}
