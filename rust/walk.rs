//! `paths.walk` in the core: the stream files under a directory, in the shared rule's stable
//! order (python/checkfu_fast/paths.py's module doc): recursive, links to directories followed
//! (each real directory walked once, by device and inode), hidden entries skipped, names with
//! one of the suffixes only, a directory's own files in sorted order then its subdirectories in
//! sorted order, each walked the same way; a directory entry that is not a regular file (a
//! FIFO, a device, a socket) skipped and named, one that cannot be examined listed. `None` where
//! a name is not UTF-8 (Python sorts those by its own rule: the caller walks in Python).

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// A file's stamp as `paths.stamp_of` takes it: size, mtime and ctime (ns), inode, device.
pub type Stamp = (u64, i128, i128, u64, u64);

/// What the walk found, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A file listed, with its stamp when asked for and it could be examined.
    File(String, Option<Stamp>),
    /// An entry that is not a regular file, skipped: its path and what it is.
    Skipped(String, &'static str),
}

fn stamp(m: &fs::Metadata) -> Stamp {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        m.size(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
        m.ino(),
        m.dev(),
    )
}

/// `paths._KINDS`: what a file that is not regular is.
fn kind(t: fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// `os.path.join(dir, name)`.
fn join(dir: &str, name: &str) -> String {
    let mut p = String::with_capacity(dir.len() + name.len() + 1);
    p.push_str(dir);
    if !dir.ends_with('/') {
        p.push('/');
    }
    p.push_str(name);
    p
}

/// The walk of `directory` (see the module doc): `suffixes` None takes every file that is not
/// hidden; `stats` gives each listed file's stamp (`os.stat`, links followed).
pub fn walk(directory: &str, suffixes: Option<&[String]>, stats: bool) -> Option<Vec<Found>> {
    let mut out = Vec::new();
    let Ok(top) = fs::metadata(directory) else {
        return Some(out);
    };
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    // os.walk's top-down order with sorted names, links followed, iteratively: a directory's
    // files, then each subdirectory (marked when its turn comes) walked the same way
    let mut todo: Vec<(String, (u64, u64))> = vec![(directory.to_owned(), (top.dev(), top.ino()))];
    while let Some((path, key)) = todo.pop() {
        if !seen.insert(key) {
            continue;
        }
        let Ok(listing) = fs::read_dir(&path) else {
            continue; // an unreadable directory lists nothing
        };
        let Ok(entries) = listing.collect::<Result<Vec<fs::DirEntry>, _>>() else {
            continue; // a listing that fails part way lists nothing (`list(os.scandir())`)
        };
        let mut files: Vec<(String, Option<fs::FileType>)> = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        for entry in entries {
            let name = entry.file_name().into_string().ok()?;
            let t = entry.file_type().ok();
            // DirEntry.is_dir(): a link followed, an error is False
            let is_dir = match t {
                Some(t) if t.is_symlink() => {
                    fs::metadata(join(&path, &name)).is_ok_and(|m| m.is_dir())
                }
                Some(t) => t.is_dir(),
                None => false,
            };
            if is_dir {
                dirs.push(name);
            } else {
                files.push((name, t));
            }
        }
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, t) in files {
            if name.starts_with('.') {
                continue;
            }
            if let Some(sfx) = suffixes {
                if !sfx.iter().any(|s| name.ends_with(s.as_str())) {
                    continue;
                }
            }
            let p = join(&path, &name);
            if !stats {
                // the directory's own entry type (a link: what it points to)
                let regular = match t {
                    Some(t) if t.is_symlink() => fs::metadata(&p).is_ok_and(|m| m.is_file()),
                    Some(t) => t.is_file(),
                    None => false,
                };
                if regular {
                    out.push(Found::File(p, None));
                    continue;
                }
            }
            match fs::metadata(&p) {
                Err(_) => out.push(Found::File(p, None)), // reading it reports why
                Ok(m) if m.is_file() => {
                    let st = stats.then(|| stamp(&m));
                    out.push(Found::File(p, st));
                }
                Ok(m) => {
                    let what = kind(m.file_type());
                    out.push(Found::Skipped(p, what));
                }
            }
        }
        dirs.sort_unstable();
        for name in dirs.into_iter().rev() {
            if name.starts_with('.') {
                continue;
            }
            let p = join(&path, &name);
            if let Ok(m) = fs::metadata(&p) {
                todo.push((p, (m.dev(), m.ino())));
            }
        }
    }
    Some(out)
}
