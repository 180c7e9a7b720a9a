//! `coder::hover`: what the language server says about a position — the
//! type or signature and the documentation, as text.

use super::semantic;
use super::{resolve, resolve_scope};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const MAX_HOVER_BYTES: usize = 16 << 10;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "HoverInput")]
pub struct HoverInput {
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based byte column.
    pub column: u32,
    /// Optional per-call session working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "HoverOutput")]
pub struct HoverOutput {
    /// The server's text (empty when it has nothing for that position), at most 16 KiB.
    pub contents: String,
    /// `markdown` or `plaintext`.
    pub format: String,
    /// True when contents was cut at 16 KiB.
    pub truncated: bool,
    /// The server that answered.
    pub language_server: String,
    /// The revision of the file's bytes the answer is for.
    pub revision: String,
    /// Present when the server was busy (loading, indexing): how long ide waited for it and for what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::hover",
        "The type, signature and documentation a language server has for a position. Send \
         {path, line, column}; get {contents, format: markdown|plaintext, truncated, \
         language_server, revision} — empty contents when it has nothing there. Needs the \
         file's language server (coder::info lists them); without one the error says which \
         to install. Lines are 1-based; columns are 1-based byte offsets in the line, as in \
         coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: HoverInput| async move { hover(&ctx, req).await },
    )
}

async fn hover(ctx: &Ctx, req: HoverInput) -> Result<HoverOutput, Failure> {
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let at = resolve(ctx, &req.path, scope.as_ref())?;
    let o = semantic::open(ctx, &req.path, &at)
        .await?
        .map_err(|u| u.failure())?;
    super::source::offset_of(&req.path, &o.text, req.line, req.column)?;
    let (v, waited) = ctx
        .services
        .servers
        .request_settled(
            &o.conn,
            "textDocument/hover",
            o.position(req.line, req.column),
            o.timeout(&ctx.runtime),
            |v| v.is_null(),
        )
        .await?;
    let (mut contents, format) = render(&v["contents"]);
    let truncated = contents.len() > MAX_HOVER_BYTES;
    if truncated {
        let mut cut = MAX_HOVER_BYTES;
        while !contents.is_char_boundary(cut) {
            cut -= 1;
        }
        contents.truncate(cut);
    }
    Ok(HoverOutput {
        contents,
        format,
        truncated,
        language_server: o.conn.name.clone(),
        revision: o.revision,
        note: waited,
    })
}

/// Hover contents (MarkupContent, a MarkedString or a list of them) as
/// one text and its format.
pub fn render(v: &serde_json::Value) -> (String, String) {
    use serde_json::Value;
    match v {
        Value::Object(m) if m.contains_key("kind") => (
            m.get("value")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            if m.get("kind").and_then(Value::as_str) == Some("plaintext") {
                "plaintext".into()
            } else {
                "markdown".into()
            },
        ),
        Value::Object(m) => (
            format!(
                "```{}\n{}\n```",
                m.get("language").and_then(Value::as_str).unwrap_or(""),
                m.get("value").and_then(Value::as_str).unwrap_or("")
            ),
            "markdown".into(),
        ),
        Value::String(s) => (s.clone(), "markdown".into()),
        Value::Array(a) => (
            a.iter()
                .map(|x| render(x).0)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"),
            "markdown".into(),
        ),
        _ => (String::new(), "plaintext".into()),
    }
}
