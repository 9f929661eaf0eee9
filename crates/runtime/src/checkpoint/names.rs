//! The run id and node names of stored checkpoints, shared by a run's records: they
//! name the same run and the same few nodes over and over.

use std::sync::Arc;

/// A run id or a node name in a stored checkpoint (see [`Names`]).
pub(crate) type Name = Arc<str>;

/// The run id and node names an encoder has written, shared by the records it makes
/// (a run's records name a handful of nodes over and over), up to [`Names::MAX`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Names(Vec<Name>);

impl Names {
    /// Names kept; a graph with more nodes gets a fresh copy of the others each time.
    const MAX: usize = 64;

    /// `name`, shared with the records written before when they held it.
    pub(crate) fn get(&mut self, name: &str) -> Name {
        if let Some(known) = self.0.iter().find(|known| ***known == *name) {
            return known.clone();
        }
        let name: Name = Arc::from(name);
        if self.0.len() < Self::MAX {
            self.0.push(name.clone());
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_shared_once_known_and_copied_beyond_the_limit() {
        let mut names = Names::default();
        let first = names.get("intake");
        assert!(Arc::ptr_eq(&first, &names.get("intake")));
        for n in 1..Names::MAX {
            names.get(&format!("node-{n}"));
        }
        let late = names.get("one-too-many");
        assert_eq!(&*late, "one-too-many");
        assert!(!Arc::ptr_eq(&late, &names.get("one-too-many")));
        assert!(Arc::ptr_eq(&first, &names.get("intake")));
    }
}
