//! Fixture paths (recorded answers, fixture sites, sample resumes) found relative to the
//! current directory and then its parents, so that every example works from any clone and
//! from any directory inside it: nothing of the clone it was built in is baked in.

use std::path::{Path, PathBuf};

/// Finding a fixture path failed.
#[derive(Debug)]
pub struct NotFound {
    /// The relative path looked for.
    pub wanted: String,
    /// Every path tried, nearest first.
    pub looked: Vec<PathBuf>,
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let looked: Vec<String> = self
            .looked
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        write!(
            f,
            "{} was not found in the current directory or any parent (looked in {})",
            self.wanted,
            looked.join(", ")
        )
    }
}

impl std::error::Error for NotFound {}

/// `relative` as it exists under `start` or the nearest of its parents; an absolute path
/// is taken as given when it exists.
pub fn locate_from(start: &Path, relative: &Path) -> Result<PathBuf, NotFound> {
    if relative.is_absolute() {
        return if relative.exists() {
            Ok(relative.to_path_buf())
        } else {
            Err(NotFound {
                wanted: relative.display().to_string(),
                looked: vec![relative.to_path_buf()],
            })
        };
    }
    let mut looked = Vec::new();
    for dir in start.ancestors() {
        let candidate = dir.join(relative);
        if candidate.exists() {
            return Ok(candidate);
        }
        looked.push(candidate);
    }
    Err(NotFound {
        wanted: relative.display().to_string(),
        looked,
    })
}

/// `relative` under the current directory or the nearest of its parents.
///
/// ```
/// let error = examples::fixtures::locate("fixtures/no-such-thing".as_ref()).unwrap_err();
/// assert!(error.to_string().contains("fixtures/no-such-thing was not found"));
/// ```
pub fn locate(relative: &Path) -> Result<PathBuf, NotFound> {
    let here = std::env::current_dir().unwrap_or_default();
    locate_from(&here, relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_in_a_parent_and_the_error_names_every_place_looked() {
        let root = tempfile::tempdir().unwrap();
        let wanted = root.path().join("fixtures/page-explorer/dry-run");
        std::fs::create_dir_all(&wanted).unwrap();
        let deep = root.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(
            locate_from(&deep, Path::new("fixtures/page-explorer/dry-run")).unwrap(),
            wanted
        );
        let error = locate_from(&deep, Path::new("fixtures/nowhere")).unwrap_err();
        assert_eq!(error.looked[0], deep.join("fixtures/nowhere"));
        assert!(error.looked.contains(&root.path().join("fixtures/nowhere")));
        let text = error.to_string();
        assert!(text.contains("fixtures/nowhere was not found"), "{text}");
        assert!(text.contains(&deep.join("fixtures/nowhere").display().to_string()));
    }
}
