//! A validated graph, its routes and its Mermaid rendering.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use super::Node;

/// An erased router: the position of the returned key among the branch keys, or the
/// unknown key.
pub(crate) type Router<S> = Box<dyn Fn(&S) -> Result<usize, String> + Send + Sync>;

/// Where a route leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Node(usize),
    End,
}

/// A node's (or START's) outgoing edges, resolved to indices.
pub(crate) enum Route<S> {
    Direct(Target),
    Branch {
        router: Router<S>,
        keys: Vec<String>,
        targets: Vec<Target>,
    },
}

impl<S> Route<S> {
    /// The next target for `state`; `Err` carries a key the branches do not list.
    #[inline]
    pub(crate) fn next(&self, state: &S) -> Result<Target, String> {
        match self {
            Route::Direct(target) => Ok(*target),
            Route::Branch {
                router, targets, ..
            } => {
                let position = router(state)?;
                targets.get(position).copied().ok_or_else(String::new)
            }
        }
    }

    pub(crate) fn targets(&self) -> impl Iterator<Item = Target> + '_ {
        let (one, many) = match self {
            Route::Direct(t) => (Some(*t), &[][..]),
            Route::Branch { targets, .. } => (None, &targets[..]),
        };
        one.into_iter().chain(many.iter().copied())
    }

    pub(crate) fn node_targets(&self) -> impl Iterator<Item = usize> + '_ {
        self.targets().filter_map(|t| match t {
            Target::Node(i) => Some(i),
            Target::End => None,
        })
    }

    /// The keys the router may return (empty for a plain edge).
    pub(crate) fn keys(&self) -> &[String] {
        match self {
            Route::Direct(_) => &[],
            Route::Branch { keys, .. } => keys,
        }
    }
}

pub(crate) struct CompiledNode<S, E> {
    pub(crate) name: Arc<str>,
    pub(crate) node: Arc<dyn Node<S, E>>,
    pub(crate) route: Route<S>,
}

/// A validated graph, ready to run any number of times, concurrently if need be (share it
/// in an `Arc`). Built by [`StateGraph::compile`](super::StateGraph::compile).
///
/// Names are resolved to indices at compile time, so running it costs one boxed future
/// per node and no lookups by name.
pub struct CompiledGraph<S, E = ()> {
    pub(crate) nodes: Vec<CompiledNode<S, E>>,
    pub(crate) entry: Route<S>,
    pub(crate) step_limit: u64,
}

impl<S, E> fmt::Debug for CompiledGraph<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.node_names().collect::<Vec<_>>())
            .field("step_limit", &self.step_limit)
            .finish_non_exhaustive()
    }
}

impl<S, E> CompiledGraph<S, E> {
    /// The node names, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.nodes.iter().map(|n| &*n.name)
    }

    /// The maximum number of node runs in one run.
    pub fn step_limit(&self) -> u64 {
        self.step_limit
    }

    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| &*n.name == name)
    }

    pub(crate) fn target_name(&self, target: Target) -> Option<&Arc<str>> {
        match target {
            Target::Node(i) => Some(&self.nodes[i].name),
            Target::End => None,
        }
    }

    /// The graph as a Mermaid flowchart (`graph TD`): `START` and `END` as rounded
    /// nodes, plain edges as arrows and conditional edges as dotted arrows labelled with
    /// their key.
    ///
    /// ```
    /// use agent_runtime::graph::{NodeContext, StateGraph, node_fn};
    ///
    /// let graph = StateGraph::sequence([
    ///     ("fetch", node_fn(|_: &NodeContext<()>| Box::pin(async { Ok(()) }))),
    /// ])
    /// .compile()?;
    /// assert_eq!(
    ///     graph.to_mermaid(),
    ///     "graph TD\n    __start__([START])\n    fetch[fetch]\n    __end__([END])\n    \
    ///      __start__ --> fetch\n    fetch --> __end__\n",
    /// );
    /// # Ok::<(), agent_runtime::graph::GraphError>(())
    /// ```
    pub fn to_mermaid(&self) -> String {
        let ids: Vec<String> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| mermaid_id(i, &n.name))
            .collect();
        let id = |t: Target| match t {
            Target::Node(i) => ids[i].as_str(),
            Target::End => "__end__",
        };
        let mut out = String::from("graph TD\n    __start__([START])\n");
        for (node, node_id) in self.nodes.iter().zip(&ids) {
            if *node_id == *node.name {
                let _ = writeln!(out, "    {node_id}[{}]", node.name);
            } else {
                let _ = writeln!(out, "    {node_id}[\"{}\"]", escape(&node.name));
            }
        }
        out.push_str("    __end__([END])\n");
        let routes = std::iter::once(("__start__", &self.entry)).chain(
            ids.iter()
                .map(String::as_str)
                .zip(self.nodes.iter().map(|n| &n.route)),
        );
        for (from, route) in routes {
            match route {
                Route::Direct(t) => {
                    let _ = writeln!(out, "    {from} --> {}", id(*t));
                }
                Route::Branch { keys, targets, .. } => {
                    for (key, t) in keys.iter().zip(targets) {
                        let _ = writeln!(out, "    {from} -.->|{}| {}", edge_label(key), id(*t));
                    }
                }
            }
        }
        out
    }
}

/// A node's Mermaid id: its name when that is a plain identifier Mermaid accepts, else a
/// generated `__node{i}` (names starting with `__` are never kept, so the two cannot
/// collide, nor collide with `__start__` and `__end__`).
fn mermaid_id(i: usize, name: &str) -> String {
    const KEYWORDS: [&str; 9] = [
        "end",
        "graph",
        "subgraph",
        "style",
        "class",
        "classDef",
        "click",
        "linkStyle",
        "direction",
    ];
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(name));
    if plain {
        name.to_owned()
    } else {
        format!("__node{i}")
    }
}

fn escape(text: &str) -> String {
    text.replace('"', "#quot;")
}

fn edge_label(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | '.'))
    {
        key.to_owned()
    } else {
        format!("\"{}\"", escape(key))
    }
}
