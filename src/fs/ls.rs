//! `shell::fs::ls`: one directory's entries, sorted by name, paginated.
//!
//! The directory path follows symlinks (listing a link to a directory lists
//! the directory, after the policy checked where it really is); entries are
//! reported with `lstat`, so a symlink entry shows as `is_symlink: true` and
//! is never followed. Entries with protected-glob names are listed (listable,
//! never readable); entries under `fs.denylist_paths` are not listed at all,
//! because a denylisted path must read exactly like a missing one.
//!
//! Pagination over a big directory: the sorted name list is cached per
//! directory (keyed by its device, inode and mtime in nanoseconds), so
//! paging through a 100k-entry directory reads it in full once and then only
//! `lstat`s the entries of each requested page. A listing is cached only when
//! the directory's mtime is older than the moment we started reading it
//! (the "racy timestamp" rule): a change in the same clock tick as our read
//! cannot hide behind an unchanged mtime. Entries expire after
//! [`CACHE_TTL`], and at most [`CACHE_DIRS`] directories are kept.

use super::stat::FsEntry;
use crate::error::{Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Default entries per page.
pub const DEFAULT_PAGE_SIZE: u32 = 500;
/// Largest page served; larger requests are clamped.
pub const MAX_PAGE_SIZE: u32 = 2000;
/// How long a cached name list may be reused.
pub const CACHE_TTL: Duration = Duration::from_secs(30);
/// Directories whose name lists are kept.
pub const CACHE_DIRS: usize = 8;

/// Request for `shell::fs::ls`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// 1-based page of the name-sorted listing. Default 1.
    #[serde(default)]
    pub page: Option<u32>,
    /// Entries per page. Default 500, clamped to 2000. A directory larger than one page answers `has_more: true` — request the next `page` rather than expecting the whole directory in one result.
    #[serde(default)]
    pub page_size: Option<u32>,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LsResponse {
    /// Metadata for each entry on this page, sorted by name.
    pub entries: Vec<FsEntry>,
    /// Entries in the whole directory, across every page.
    #[serde(default)]
    pub total: u64,
    /// The 1-based page this response carries.
    #[serde(default)]
    pub page: u32,
    /// The page size actually applied (after clamping).
    #[serde(default)]
    pub page_size: u32,
    /// True when later pages exist; request `page + 1` to continue.
    #[serde(default)]
    pub has_more: bool,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::ls",
        "List the files and subdirectories of a directory on the filesystem, sorted by name and \
         paginated: `page` (1-based, default 1) and `page_size` (default 500, max 2000); \
         `has_more: true` means request the next page. Errors return { code, message }; common: \
         S210 bad path, S211 not found or not accessible, S212 not a directory, S215 jail \
         escape. For recursive listings prefer coder::tree.",
        Flags::NONE,
        ls,
    )
}

/// Page number and size after defaults and clamping.
fn paging(req: &LsRequest) -> Result<(u32, u32), Failure> {
    let page = req.page.unwrap_or(1);
    if page == 0 {
        return Err(Failure::bad_input(
            "page is 1-based: pass page: 1 for the first page",
        ));
    }
    let size = req.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if size == 0 {
        return Err(Failure::bad_input(format!(
            "page_size must be at least 1 (default {DEFAULT_PAGE_SIZE}, max {MAX_PAGE_SIZE})"
        )));
    }
    Ok((page, size.min(MAX_PAGE_SIZE)))
}

/// The `[start, end)` window of `total` items for a page.
fn window(total: usize, page: u32, size: u32) -> (usize, usize) {
    let start = (page as usize - 1).saturating_mul(size as usize).min(total);
    let end = start.saturating_add(size as usize).min(total);
    (start, end)
}

pub async fn ls(ctx: Ctx, req: LsRequest) -> Result<LsResponse, Failure> {
    let (page, size) = paging(&req)?;
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        #[derive(Deserialize)]
        struct Listing {
            entries: Vec<FsEntry>,
        }
        let mut all: Listing = super::forward(
            &ctx,
            "sandbox::fs::ls",
            serde_json::json!({"sandbox_id": id, "path": req.path}),
        )
        .await?;
        all.entries.sort_by(|a, b| a.name.cmp(&b.name));
        let total = all.entries.len();
        let (start, end) = window(total, page, size);
        return Ok(LsResponse {
            entries: all.entries.drain(start..end).collect(),
            total: total as u64,
            page,
            page_size: size,
            has_more: end < total,
        });
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Follow, None)?;
    let raw = req.path.clone();
    let runtime = ctx.runtime.clone();
    super::blocking(move || {
        let dir = resolved.path.clone();
        let handle = resolved
            .loc()
            .open_dir()
            .map_err(|e| match e.raw_os_error() {
                Some(nix::libc::ENOTDIR) => super::wrong_type(format!(
                    "{} is not a directory; shell::fs::ls lists directories (use \
                     shell::fs::stat for a single file)",
                    crate::error::quote(&raw)
                )),
                _ => Failure::from_io(&raw, &e),
            })?;
        let md = std::fs::File::from(
            nix::unistd::dup(std::os::fd::AsFd::as_fd(&handle))
                .map_err(|e| Failure::from_io(&raw, &e.into()))?,
        )
        .metadata()
        .map_err(|e| Failure::from_io(&raw, &e))?;
        if !md.is_dir() {
            return Err(super::wrong_type(format!(
                "{raw:?} is not a directory; shell::fs::ls lists directories (use \
                 shell::fs::stat for a single file)"
            )));
        }
        let names = sorted_names(&dir, &handle, &md).map_err(|e| Failure::from_io(&raw, &e))?;
        let hidden = |name: &OsString| runtime.policy.is_denylisted(&dir.join(name));
        let visible: Vec<&OsString> = names.iter().filter(|n| !hidden(n)).collect();
        let total = visible.len();
        let (start, end) = window(total, page, size);
        let mut entries = Vec::with_capacity(end - start);
        for name in &visible[start..end] {
            // An entry removed since the listing was read is skipped.
            let at = std::os::fd::AsFd::as_fd(&handle);
            if let Ok(md) = crate::jail::child_metadata(at, name) {
                entries.push(FsEntry::from_metadata(
                    name.to_string_lossy().into_owned(),
                    &md,
                ));
            }
        }
        Ok(LsResponse {
            entries,
            total: total as u64,
            page,
            page_size: size,
            has_more: end < total,
        })
    })
    .await
}

#[derive(Clone, PartialEq, Eq)]
struct Key {
    path: PathBuf,
    dev: u64,
    ino: u64,
    mtime_ns: i128,
}

struct Cached {
    key: Key,
    at: Instant,
    names: Arc<Vec<OsString>>,
}

fn cache() -> &'static Mutex<Vec<Cached>> {
    static CACHE: OnceLock<Mutex<Vec<Cached>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

fn key_of(dir: &Path, md: &std::fs::Metadata) -> Key {
    Key {
        path: dir.to_path_buf(),
        dev: md.dev(),
        ino: md.ino(),
        mtime_ns: md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128,
    }
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// The directory's names, sorted bytewise, from the cache when still valid.
fn sorted_names(
    dir: &Path,
    handle: &std::os::fd::OwnedFd,
    md: &std::fs::Metadata,
) -> std::io::Result<Arc<Vec<OsString>>> {
    let key = key_of(dir, md);
    {
        let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
        c.retain(|e| e.at.elapsed() < CACHE_TTL);
        if let Some(hit) = c.iter().find(|e| e.key == key) {
            return Ok(hit.names.clone());
        }
    }
    // A coarse filesystem clock can stamp a change made during our read
    // with the mtime we already saw; only trust mtimes from before the read.
    const CLOCK_SLACK_NS: i128 = 20_000_000;
    let started = now_ns();
    let mut names: Vec<OsString> = crate::jail::dir::read(std::os::fd::AsFd::as_fd(handle))?
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort_unstable();
    let names = Arc::new(names);
    if key.mtime_ns + CLOCK_SLACK_NS < started {
        let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
        c.retain(|e| e.key.path != key.path);
        if c.len() >= CACHE_DIRS {
            c.remove(0);
        }
        c.push(Cached {
            key,
            at: Instant::now(),
            names: names.clone(),
        });
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;

    #[tokio::test]
    async fn lists_sorted_with_metadata_and_paginates() {
        let k = Kit::jailed();
        for n in ["b.txt", "a.txt", "c"] {
            k.file(&format!("d/{n}"), "xy");
        }
        k.dir("d/sub");
        std::os::unix::fs::symlink("a.txt", k.root.join("d/link")).unwrap();
        let r = k.ok("shell::fs::ls", json!({"path": "d"})).await;
        let names: Vec<&str> = r["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a.txt", "b.txt", "c", "link", "sub"]);
        assert_eq!(r["total"], 5);
        assert_eq!(r["page"], 1);
        assert_eq!(r["page_size"], 500);
        assert_eq!(r["has_more"], false);
        let e = &r["entries"][0];
        assert_eq!(e["size"], 2);
        assert_eq!(e["is_dir"], false);
        assert_eq!(r["entries"][3]["is_symlink"], true);
        assert_eq!(r["entries"][4]["is_dir"], true);

        let p2 = k
            .ok(
                "shell::fs::ls",
                json!({"path": "d", "page": 2, "page_size": 2}),
            )
            .await;
        assert_eq!(p2["entries"][0]["name"], "c");
        assert_eq!(p2["entries"].as_array().unwrap().len(), 2);
        assert_eq!(p2["has_more"], true);
        let p3 = k
            .ok(
                "shell::fs::ls",
                json!({"path": "d", "page": 3, "page_size": 2}),
            )
            .await;
        assert_eq!(p3["has_more"], false);
        assert_eq!(p3["entries"].as_array().unwrap().len(), 1);
        let past = k
            .ok(
                "shell::fs::ls",
                json!({"path": "d", "page": 9, "page_size": 2}),
            )
            .await;
        assert_eq!(past["entries"].as_array().unwrap().len(), 0);
        assert_eq!(past["total"], 5);
        let clamped = k
            .ok("shell::fs::ls", json!({"path": "d", "page_size": 999999}))
            .await;
        assert_eq!(clamped["page_size"], 2000);
    }

    #[tokio::test]
    async fn a_change_after_listing_shows_on_the_next_page_request() {
        let k = Kit::jailed();
        k.file("d/a", "");
        // An old mtime makes the listing cacheable.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::open(k.root.join("d"))
            .unwrap()
            .set_modified(past)
            .unwrap();
        let r = k.ok("shell::fs::ls", json!({"path": "d"})).await;
        assert_eq!(r["total"], 1);
        let r = k.ok("shell::fs::ls", json!({"path": "d"})).await;
        assert_eq!(r["total"], 1);
        k.file("d/b", "");
        let r = k.ok("shell::fs::ls", json!({"path": "d"})).await;
        assert_eq!(r["total"], 2);
    }

    #[tokio::test]
    async fn protected_names_listed_denylisted_hidden() {
        let k = Kit::jailed();
        denied_fixtures(&k);
        let r = k.ok("shell::fs::ls", json!({"path": "."})).await;
        let names: Vec<&str> = r["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [".env", "secrets", "sub"]);
    }

    #[tokio::test]
    async fn ls_errors() {
        let k = Kit::jailed();
        k.file("f", "x");
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": "f"})).await.code,
            "S212"
        );
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": "nope"})).await.code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": "../.."})).await.code,
            "S215"
        );
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": ".", "page": 0}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": ".", "page_size": 0}))
                .await
                .code,
            "S210"
        );
        assert_eq!(
            k.err("shell::fs::ls", json!({"path": ".", "bogus": 1}))
                .await
                .code,
            "S210"
        );
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::ls", |p| json!({"path": p})).await;
    }

    #[tokio::test]
    async fn sandbox_listing_is_sorted_and_paginated_here() {
        let k = Kit::jailed();
        let e = |n: &str| json!({"name": n, "is_dir": false, "is_symlink": false, "size": 1, "mode": "0644", "mtime": 1});
        k.sandbox_answers(
            "sandbox::fs::ls",
            Ok(json!({"entries": [e("c"), e("a"), e("b")]})),
        );
        let r = k
            .ok(
                "shell::fs::ls",
                json!({"path": "/home", "page_size": 2, "target": sandbox_target()}),
            )
            .await;
        assert_eq!(r["entries"][0]["name"], "a");
        assert_eq!(r["entries"][1]["name"], "b");
        assert_eq!(r["total"], 3);
        assert_eq!(r["has_more"], true);
        assert_eq!(
            k.sandbox_calls()[0],
            (
                "sandbox::fs::ls".to_string(),
                json!({"sandbox_id": SANDBOX_ID, "path": "/home"})
            )
        );
    }
}
