//! The modules of a crate and the imports between them, read with `syn`: which module
//! uses which (a `use` or a path through `crate::`, `super::` or `self::`), leaving out
//! test code (`#[cfg(test)]` items) and a module's use of its own ancestors or
//! descendants (a parent using its child and the child its parent is ordinary Rust).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module by its path from the crate root (`[]` for the root, `["graph", "run"]`).
pub type Module = Vec<String>;

/// Every module of the crate whose sources are under `src`, with the modules it uses.
pub fn imports(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let files = rust_files(src);
    let modules: BTreeMap<Module, PathBuf> = files
        .into_iter()
        .map(|file| (module_of(src, &file), file))
        .collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut paths = Paths::default();
        paths.visit_file(&parsed);
        let used = paths
            .found
            .iter()
            .map(|path| resolve(module, path, &modules))
            .filter(|target| !related(module, target))
            .collect();
        graph.insert(module.clone(), used);
    }
    graph
}

/// The groups of two or more modules that import each other, around a cycle.
pub fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for module in graph.keys() {
        if !tarjan.index.contains_key(module) {
            tarjan.visit(module);
        }
    }
    tarjan.groups.retain(|group| group.len() > 1);
    tarjan.groups
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut module: Module = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        module.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        module.pop();
    }
    module
}

/// The deepest module of the crate that `path`, used in `from`, names.
fn resolve(from: &Module, path: &[String], modules: &BTreeMap<Module, PathBuf>) -> Module {
    let mut segments = path;
    let mut base = from.clone();
    if segments.first().is_some_and(|s| s == "crate") {
        base.clear();
        segments = &segments[1..];
    } else {
        while let Some(first) = segments.first() {
            match first.as_str() {
                "super" => {
                    base.pop();
                }
                "self" => {}
                _ => break,
            }
            segments = &segments[1..];
        }
    }
    let mut deepest = base.clone();
    for segment in segments {
        let mut candidate = deepest.clone();
        candidate.push(segment.clone());
        if !modules.contains_key(&candidate) {
            break;
        }
        deepest = candidate;
    }
    deepest
}

fn related(a: &Module, b: &Module) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The paths through `crate`, `super` or `self` a file uses, outside test code.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn is_relative(first: &str) -> bool {
    matches!(first, "crate" | "super" | "self")
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => self.found_path(prefix, &name.ident),
            syn::UseTree::Rename(rename) => self.found_path(prefix, &rename.ident),
            syn::UseTree::Glob(_) => self.found.push(prefix.clone()),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn found_path(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut path = prefix.to_vec();
        path.push(last.to_string());
        self.found.push(path);
    }
}

impl<'a> Visit<'a> for Paths {
    fn visit_item(&mut self, item: &'a syn::Item) {
        let attrs = match item {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_code(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, function: &'a syn::ImplItemFn) {
        if !is_test_code(&function.attrs) {
            syn::visit::visit_impl_item_fn(self, function);
        }
    }

    fn visit_item_use(&mut self, item: &'a syn::ItemUse) {
        if let syn::UseTree::Path(path) = &item.tree
            && is_relative(&path.ident.to_string())
        {
            self.use_tree(&mut Vec::new(), &item.tree);
        }
    }

    fn visit_path(&mut self, path: &'a syn::Path) {
        if path
            .segments
            .first()
            .is_some_and(|s| is_relative(&s.ident.to_string()))
        {
            self.found
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }
}

struct Tarjan<'g> {
    graph: &'g BTreeMap<Module, BTreeSet<Module>>,
    index: BTreeMap<&'g Module, usize>,
    low: BTreeMap<&'g Module, usize>,
    stack: Vec<&'g Module>,
    groups: Vec<Vec<Module>>,
}

impl<'g> Tarjan<'g> {
    fn visit(&mut self, module: &'g Module) {
        let number = self.index.len();
        self.index.insert(module, number);
        self.low.insert(module, number);
        self.stack.push(module);
        for used in self.graph.get(module).into_iter().flatten() {
            let Some((used, _)) = self.graph.get_key_value(used) else {
                continue;
            };
            if !self.index.contains_key(used) {
                self.visit(used);
                let low = self.low[module].min(self.low[used]);
                self.low.insert(module, low);
            } else if self.stack.contains(&used) {
                let low = self.low[module].min(self.index[used]);
                self.low.insert(module, low);
            }
        }
        if self.low[module] == self.index[module] {
            let mut group = Vec::new();
            while let Some(member) = self.stack.pop() {
                group.push(member.clone());
                if member == module {
                    break;
                }
            }
            self.groups.push(group);
        }
    }
}
