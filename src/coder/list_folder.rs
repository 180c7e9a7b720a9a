//! `coder::list-folder`: one folder, sorted by name, paginated.
//!
//! Names are read once per call and sorted; only the page's entries are
//! stat-ed, so a folder of 100k entries costs one directory scan, not 100k
//! stats. Entries under `fs.denylist_paths` are omitted (they read as
//! missing everywhere); entries matching `non_accessible_globs` are listed
//! with `non_accessible: true`.

use super::{EntryKind, blocking, mtime_secs, resolve, resolve_scope};
use crate::error::{Class, Failure};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Resolved;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;

fn default_path() -> String {
    ".".to_string()
}

fn default_page() -> u64 {
    1
}

/// List one folder.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ListFolderInput")]
pub struct ListFolderInput {
    /// Folder to list (default `.`).
    #[serde(default = "default_path")]
    pub path: String,
    /// Page number, 1-based.
    #[serde(default = "default_page")]
    pub page: u64,
    /// Capped at list_max_page_size; defaults to list_default_page_size (see coder::info).
    #[serde(default)]
    pub page_size: Option<u64>,
    /// Optional per-call session working directory: relative paths anchor here and must stay inside it (C220).
    #[serde(default)]
    pub base_dir: Option<String>,
    /// Give each regular file on the page its `lines` (the count coder::read-file answers as total_lines) — to rank files by size without reading them. Files over max_read_bytes and protected files carry none.
    #[serde(default)]
    pub line_counts: bool,
}

/// One listed entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DirEntry {
    /// Entry basename. The absolute path is derivable from the response's `path`: entry path = folder path + "/" + name.
    pub name: String,
    /// file, dir, symlink (not followed) or other.
    pub kind: EntryKind,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Last-modified time, Unix seconds.
    pub mtime: i64,
    /// True if this entry matches `non_accessible_globs` — caller cannot read/write/delete it via `coder::*` even though it shows up here.
    pub non_accessible: bool,
    /// With `line_counts: true`: the file's line count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// One page of a folder listing.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "ListFolderOutput")]
pub struct ListFolderOutput {
    /// Canonical absolute path of the listed folder (resolved through the jail). Entries carry only `name`; derive an entry's absolute path by joining: entry path = this path + "/" + name. Operations on derived paths re-validate through the jail.
    pub path: String,
    /// This page's entries, sorted by name.
    pub entries: Vec<DirEntry>,
    /// Entries in the folder (all pages).
    pub total: u64,
    /// The page returned.
    pub page: u64,
    /// The page size applied (after clamping).
    pub page_size: u64,
    /// More pages follow.
    pub has_more: bool,
}

pub fn def() -> FunctionDef {
    function(
        "coder::list-folder",
        "List one folder, paginated and sorted by name. Entries carry only name; entry path = \
         response path + '/' + name. Non-accessible entries are listed with non_accessible: true. With \
         line_counts: true each file carries its `lines`. \
         Paths: relative to the primary root or absolute inside an allowed root (see coder::info).",
        Flags::NONE,
        |ctx: Ctx, req: ListFolderInput| async move { list_folder(&ctx, req).await },
    )
}

/// A directory read by handle: its entries' names, sorted, without the
/// denylisted ones (and the worker's staging names).
pub struct Listing {
    pub dir: std::os::fd::OwnedFd,
    pub path: PathBuf,
    pub names: Vec<OsString>,
}

/// Read the directory `dir` (resolved by the policy) through its handle.
pub fn sorted_names(ctx: &Ctx, raw: &str, dir: &Resolved) -> Result<Listing, Failure> {
    let fd = dir
        .loc()
        .open_dir()
        .map_err(|e| Failure::from_io(raw, &e))?;
    let entries = crate::jail::dir::read_sorted(std::os::fd::AsFd::as_fd(&fd))
        .map_err(|e| Failure::from_io(raw, &e))?;
    let policy = &ctx.runtime.policy;
    let names = entries
        .into_iter()
        .map(|e| e.name)
        .filter(|n| !policy.is_denylisted(&dir.path.join(n)))
        .collect();
    Ok(Listing {
        dir: fd,
        path: dir.path.clone(),
        names,
    })
}

/// Describe one entry without following a symlink.
pub fn describe(
    ctx: &Ctx,
    listing: &Listing,
    name: &OsString,
) -> Option<(EntryKind, u64, i64, bool, PathBuf)> {
    let path = listing.path.join(name);
    let md = crate::jail::child_metadata(std::os::fd::AsFd::as_fd(&listing.dir), name).ok()?;
    let kind = EntryKind::of(&md.file_type());
    let protected = ctx.runtime.policy.is_non_accessible(&path);
    Some((kind, md.len(), mtime_secs(&md), protected, path))
}

async fn list_folder(ctx: &Ctx, req: ListFolderInput) -> Result<ListFolderOutput, Failure> {
    if req.page == 0 {
        return Err(Failure::bad_input("page is 1-based: pass page >= 1"));
    }
    let code = &ctx.runtime.config.code;
    let page_size = req
        .page_size
        .unwrap_or(code.list_default_page_size as u64)
        .clamp(1, code.list_max_page_size as u64);
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let resolved = resolve(ctx, &req.path, scope.as_ref())?;
    if !resolved.exists {
        return Err(Failure::not_found(&req.path));
    }
    if !resolved
        .loc()
        .lstat()
        .is_ok_and(|st| crate::jail::is_dir_mode(st.st_mode))
    {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "{:?} is a file, not a folder; read it with coder::read-file",
                req.path
            ),
        ));
    }
    let ctx2 = ctx.clone();
    let raw = req.path.clone();
    let page = req.page;
    let line_counts = req.line_counts;
    let read_cap = ctx.runtime.config.fs.max_read_bytes;
    blocking(move || {
        let listing = sorted_names(&ctx2, &raw, &resolved)?;
        let names = &listing.names;
        let total = names.len() as u64;
        let start = (page - 1).saturating_mul(page_size);
        let entries = names
            .iter()
            .skip(start.min(total) as usize)
            .take(page_size as usize)
            .filter_map(|name| {
                let (kind, size, mtime, non_accessible, _) = describe(&ctx2, &listing, name)?;
                let lines = (line_counts && kind == EntryKind::File && !non_accessible)
                    .then(|| {
                        crate::coder::lines::count_lines_of(
                            std::os::fd::AsFd::as_fd(&listing.dir),
                            name,
                            read_cap,
                        )
                    })
                    .flatten();
                Some(DirEntry {
                    name: name.to_string_lossy().into_owned(),
                    kind,
                    size,
                    mtime,
                    non_accessible,
                    lines,
                })
            })
            .collect();
        Ok(ListFolderOutput {
            path: listing.path.display().to_string(),
            entries,
            total,
            page,
            page_size,
            has_more: start.saturating_add(page_size) < total,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use crate::testkit::{Jail, assert_redacted};
    use serde_json::json;

    const ID: &str = "coder::list-folder";

    #[tokio::test]
    async fn line_counts_come_when_asked_for_files_coder_may_read() {
        let j = Jail::new();
        j.write("p/a.txt", "1\n2\n3");
        j.write("p/b.txt", "");
        j.write("p/.env", "SECRET=1\n");
        std::fs::create_dir(j.path("p/d")).unwrap();
        std::os::unix::fs::symlink(j.path("p/a.txt"), j.path("p/l")).unwrap();
        nix::unistd::mkfifo(
            &j.path("p/f"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let v = j
            .call(ID, json!({"path": "p", "line_counts": true}))
            .await
            .unwrap();
        let lines = |name: &str| {
            v["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {v}"))
                .get("lines")
                .cloned()
        };
        assert_eq!(lines("a.txt"), Some(json!(3)));
        assert_eq!(lines("b.txt"), Some(json!(0)));
        // a protected file, a folder, a link and a FIFO (never waited on) carry none
        for name in [".env", "d", "l", "f"] {
            assert_eq!(lines(name), None, "{name}: {v}");
        }
        // not asked: no field at all
        let v = j.call(ID, json!({"path": "p"})).await.unwrap();
        assert!(
            v["entries"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e.get("lines").is_none())
        );
    }

    #[tokio::test]
    async fn lists_sorted_and_paginated() {
        let j = Jail::new();
        for n in ["c", "a", "b", "e", "d"] {
            j.write(&format!("dir/{n}"), n);
        }
        std::fs::create_dir(j.path("dir/z")).unwrap();
        let v = j
            .call(ID, json!({"path": "dir", "page": 2, "page_size": 2}))
            .await
            .unwrap();
        let names: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c", "d"]);
        assert_eq!(v["total"], 6);
        assert_eq!(v["has_more"], true);
        assert_eq!(v["path"], j.path("dir").display().to_string());
        let last = j
            .call(ID, json!({"path": "dir", "page": 3, "page_size": 2}))
            .await
            .unwrap();
        assert_eq!(last["has_more"], false);
        assert_eq!(last["entries"][1]["kind"], "dir");
    }

    #[tokio::test]
    async fn page_size_is_clamped_and_defaulted() {
        let j = Jail::with(|c| {
            c.code.list_max_page_size = 3;
            c.code.list_default_page_size = 2;
        });
        for n in 0..5 {
            j.write(&format!("d/{n}"), "");
        }
        let v = j
            .call(ID, json!({"path": "d", "page_size": 99}))
            .await
            .unwrap();
        assert_eq!(v["page_size"], 3);
        let v = j.call(ID, json!({"path": "d"})).await.unwrap();
        assert_eq!(v["page_size"], 2);
        let (c, _) = j
            .call(ID, json!({"path": "d", "page": 0}))
            .await
            .unwrap_err();
        assert_eq!(c, "C210");
    }

    #[tokio::test]
    async fn protected_entries_are_flagged_and_denylisted_ones_hidden() {
        let j = Jail::new();
        j.write(".env", "x");
        j.write("main.rs", "x");
        j.write("denied/x", "x");
        let v = j.call(ID, json!({})).await.unwrap();
        let entries = v["entries"].as_array().unwrap();
        let env = entries.iter().find(|e| e["name"] == ".env").unwrap();
        assert_eq!(env["non_accessible"], true);
        let main = entries.iter().find(|e| e["name"] == "main.rs").unwrap();
        assert_eq!(main["non_accessible"], false);
        assert!(entries.iter().all(|e| e["name"] != "denied"));
    }

    #[tokio::test]
    async fn symlinks_are_reported_not_followed() {
        let j = Jail::new();
        std::os::unix::fs::symlink("/etc", j.path("etc-link")).unwrap();
        let v = j.call(ID, json!({})).await.unwrap();
        assert_eq!(v["entries"][0]["kind"], "symlink");
    }

    #[tokio::test]
    async fn a_file_is_the_wrong_type_and_denied_reads_like_missing() {
        let j = Jail::new();
        j.write("f", "x");
        j.write("denied/d/x", "x");
        let (c, _) = j.call(ID, json!({"path": "f"})).await.unwrap_err();
        assert_eq!(c, "C212");
        assert_redacted(
            j.call(ID, json!({"path": "denied/d"})).await,
            "denied/d",
            j.call(ID, json!({"path": "nope/d"})).await,
            "nope/d",
        );
    }
}
