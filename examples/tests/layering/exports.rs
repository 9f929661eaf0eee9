//! What a crate exports at its root (`pub` items and `pub use` names of its `lib.rs`), and
//! what `docs/ARCHITECTURE.md` says each crate exports (its section's `**Root exports**:`
//! line), read so the two can be compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The names `lib.rs` makes public at the crate root (`module::*` for a glob).
pub fn root_exports(lib: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(lib).unwrap();
    let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    let mut names = BTreeSet::new();
    for item in &file.items {
        let (visibility, name) = match item {
            syn::Item::Mod(m) => (&m.vis, m.ident.to_string()),
            syn::Item::Fn(f) => (&f.vis, f.sig.ident.to_string()),
            syn::Item::Struct(s) => (&s.vis, s.ident.to_string()),
            syn::Item::Enum(e) => (&e.vis, e.ident.to_string()),
            syn::Item::Trait(t) => (&t.vis, t.ident.to_string()),
            syn::Item::Type(t) => (&t.vis, t.ident.to_string()),
            syn::Item::Const(c) => (&c.vis, c.ident.to_string()),
            syn::Item::Static(s) => (&s.vis, s.ident.to_string()),
            syn::Item::Use(u) => {
                if matches!(u.vis, syn::Visibility::Public(_)) {
                    used_names(&u.tree, &mut Vec::new(), &mut names);
                }
                continue;
            }
            _ => continue,
        };
        if matches!(visibility, syn::Visibility::Public(_)) {
            names.insert(name);
        }
    }
    names
}

fn used_names(tree: &syn::UseTree, prefix: &mut Vec<String>, names: &mut BTreeSet<String>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            used_names(&path.tree, prefix, names);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            names.insert(name.ident.to_string());
        }
        syn::UseTree::Rename(rename) => {
            names.insert(rename.rename.to_string());
        }
        syn::UseTree::Glob(_) => {
            names.insert(format!("{}::*", prefix.join("::")));
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                used_names(tree, prefix, names);
            }
        }
    }
}

/// Each crate directory's documented root exports: the backquoted names of the
/// `**Root exports**` paragraph in its `### \`crates/<dir>\`` section.
pub fn documented(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut documented = BTreeMap::new();
    let mut section = None;
    let mut reading = false;
    for line in architecture.lines() {
        if let Some(rest) = line.strip_prefix("### `crates/") {
            section = rest.split('`').next().map(str::to_owned);
            reading = false;
            continue;
        }
        if line.starts_with("## ") {
            section = None;
        }
        let Some(name) = &section else { continue };
        if line.starts_with("**Root exports**") {
            reading = true;
            documented.insert(name.clone(), BTreeSet::new());
        } else if line.trim().is_empty() {
            reading = false;
        }
        if reading && let Some(names) = documented.get_mut(name) {
            let quoted = line.split('`').skip(1).step_by(2);
            // A path (the test that checks the list) is not a name.
            names.extend(quoted.filter(|q| !q.contains('/')).map(str::to_owned));
        }
    }
    documented
}
