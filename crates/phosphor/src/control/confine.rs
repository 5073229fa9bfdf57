//! Where a command may write files: the dump directory a server was given.
//!
//! A server sets, on the thread that runs each command it received, the policy of the server it
//! came from ([`Limits::dump_dir`](super::Limits::dump_dir)); a handler that writes a file asks
//! [`writable_path`] for the path it may use. Called in process (not through a server), a command
//! writes where it is told: the program is its own caller.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};

/// What the server a command came through allows it to write.
#[derive(Clone, Debug, Default)]
pub(crate) enum WritePolicy {
    /// Anywhere: a command called in process, or through a Unix socket (its clients are this
    /// user) with no dump directory.
    #[default]
    Anywhere,
    /// Inside this directory only.
    Inside(PathBuf),
    /// Nowhere: a TCP server with no dump directory (its token alone would grant the program's
    /// every write permission).
    Nowhere,
}

thread_local! {
    static POLICY: RefCell<WritePolicy> = const { RefCell::new(WritePolicy::Anywhere) };
}

/// Runs `f` with `policy` as the calling thread's write policy.
pub(crate) fn with_policy<R>(policy: WritePolicy, f: impl FnOnce() -> R) -> R {
    let old = POLICY.with(|p| p.replace(policy));
    let r = f();
    POLICY.with(|p| *p.borrow_mut() = old);
    r
}

/// The path a command running on this thread may write for the requested `path`, or why it may
/// not. Inside a dump directory, `path` is relative to it (an absolute path must lie inside it),
/// may not climb out with `..`, may not pass through a symbolic link that leads out, and may not
/// name an existing symbolic link.
pub fn writable_path(path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    match POLICY.with(|p| p.borrow().clone()) {
        WritePolicy::Anywhere => Ok(PathBuf::from(path)),
        WritePolicy::Nowhere => Err("this server writes no files: the program gave it no dump directory \
             (control::Limits::dump_dir)"
            .into()),
        WritePolicy::Inside(dir) => inside(&dir, Path::new(path)),
    }
}

fn inside(dir: &Path, path: &Path) -> Result<PathBuf, String> {
    let outside = || format!("{} is outside the dump directory {}", path.display(), dir.display());
    let relative = if path.is_absolute() { path.strip_prefix(dir).map_err(|_| outside())? } else { path };
    if relative.as_os_str().is_empty() || relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!(
            "{}: a dump path is a file name inside the dump directory {} (no `..`)",
            path.display(),
            dir.display()
        ));
    }
    let target = dir.join(relative);
    // Symbolic links inside the directory could lead out of it: the directory holding the file,
    // resolved, must still lie inside the resolved dump directory.
    let real_dir = dir.canonicalize().map_err(|e| format!("the dump directory {}: {e}", dir.display()))?;
    let parent = target.parent().unwrap_or(dir);
    let real_parent = parent.canonicalize().map_err(|e| format!("{}: {e}", parent.display()))?;
    if !real_parent.starts_with(&real_dir) {
        return Err(outside());
    }
    if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!("{} is a symbolic link; a dump does not write through one", path.display()));
    }
    Ok(target)
}

#[cfg(all(test, unix))] // Unix paths and symbolic links
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_dump_directory() {
        let dir = std::env::temp_dir().join(format!("phosphor-confine-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let policy = WritePolicy::Inside(dir.clone());
        with_policy(policy, || {
            assert_eq!(writable_path("a.phos").unwrap(), dir.join("a.phos"));
            assert_eq!(writable_path("sub/a.phos").unwrap(), dir.join("sub/a.phos"));
            let abs = dir.join("b.phos");
            assert_eq!(writable_path(abs.to_str().unwrap()).unwrap(), abs);
            for bad in ["../a.phos", "sub/../../a.phos", "/etc/passwd", "/tmp/x.phos", ".", ""] {
                assert!(writable_path(bad).is_err(), "{bad:?} was allowed");
            }
            // A link to a directory outside, and a link as the file itself, are refused.
            std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
            let e = writable_path("out/a.phos").unwrap_err();
            assert!(e.contains("outside"), "{e}");
            std::os::unix::fs::symlink("/tmp/elsewhere.phos", dir.join("l.phos")).unwrap();
            let e = writable_path("l.phos").unwrap_err();
            assert!(e.contains("symbolic link"), "{e}");
        });
        // Back on the default policy, in process.
        assert_eq!(writable_path("/tmp/x.phos").unwrap(), PathBuf::from("/tmp/x.phos"));
        with_policy(WritePolicy::Nowhere, || {
            assert!(writable_path("a.phos").unwrap_err().contains("no dump directory"));
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
