//! `ide::ui-content`: the console page's assets and the content function the
//! console calls to fetch them.
//!
//! The page is built from `ui/` by esbuild into `ui/dist/` and the result is
//! committed, so the bytes are embedded here with `include_str!` and
//! `cargo build` never needs node. The bus publishes each asset with one
//! `console:script` / `console:style` binding whose `function_id` is this
//! function (`bus::publish_ui`); the console then asks for it by path.

use crate::error::{Class, Failure, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The content function's id.
pub const CONTENT_FUNCTION: &str = "ide::ui-content";

/// One embedded asset.
pub struct Asset {
    /// Asset identity in the console (`<scope>/<name>`), the trigger's `config.path`.
    pub path: &'static str,
    /// The console-owned trigger type that publishes it.
    pub trigger_type: &'static str,
    pub content_type: &'static str,
    pub content: &'static str,
}

/// Every asset the page consists of; the scope (`ide`) is the first segment.
pub const ASSETS: [Asset; 2] = [
    Asset {
        path: "ide/page.js",
        trigger_type: "console:script",
        content_type: "text/javascript",
        content: include_str!("../../ui/dist/page.js"),
    },
    Asset {
        path: "ide/styles.css",
        trigger_type: "console:style",
        content_type: "text/css",
        content: include_str!("../../ui/dist/styles.css"),
    },
];

/// Input of the content function: the console asks for one asset by path.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "UiContentInput")]
pub struct UiContentInput {
    /// The asset path from the trigger config (e.g. `state/page.js`).
    pub path: String,
}

/// Output of the content function.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "UiContentResult")]
pub struct UiContentResult {
    /// The asset source, verbatim.
    pub content: String,
    /// MIME type the console should serve the asset with.
    pub content_type: String,
}

pub fn def() -> FunctionDef {
    function(
        CONTENT_FUNCTION,
        "Takes `path` (an asset of the page). Serve the ide worker's injected console UI assets (content function for its \
         console:script / console:style triggers).",
        Flags::INTERNAL,
        |_ctx: Ctx, req: UiContentInput| async move { content(&req.path) },
    )
}

/// The asset at `path`, or a 210 naming the paths that exist.
pub fn content(path: &str) -> crate::error::Result<UiContentResult> {
    match ASSETS.iter().find(|a| a.path == path) {
        Some(a) => Ok(UiContentResult {
            content: a.content.to_string(),
            content_type: a.content_type.to_string(),
        }),
        None => {
            let valid: Vec<String> = ASSETS.iter().map(|a| quote(a.path)).collect();
            Err(Failure::new(
                Class::BadInput,
                format!(
                    "no console asset at path {}; ide serves exactly {}",
                    quote(path),
                    valid.join(" and ")
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Surface;

    #[test]
    fn serves_the_script_and_the_stylesheet_with_their_types() {
        let js = content("ide/page.js").expect("page.js");
        assert_eq!(js.content_type, "text/javascript");
        assert!(js.content.contains("export"), "page.js is an ES module");
        assert_eq!(js.content, ASSETS[0].content);
        let css = content("ide/styles.css").expect("styles.css");
        assert_eq!(css.content_type, "text/css");
        assert_eq!(css.content, ASSETS[1].content);
    }

    /// Every rule of the stylesheet sits under the console's scope wrapper,
    /// so nothing leaks onto the console around the page.
    #[test]
    fn every_style_rule_is_scoped_to_the_page() {
        let css = ASSETS[1].content;
        let mut rules = 0;
        for block in css.split('}') {
            let Some((selectors, _)) = block.split_once('{') else {
                continue;
            };
            for selector in selectors.split(',') {
                let selector = selector.trim();
                assert!(
                    selector.starts_with("[data-iii-ui=ide]")
                        || selector.starts_with("[data-iii-ui=\"ide\"]"),
                    "unscoped selector {selector:?}"
                );
            }
            rules += 1;
        }
        assert!(rules > 10, "{rules} rules");
    }

    #[test]
    fn an_unknown_path_is_a_bad_input_naming_the_valid_ones() {
        for bad in ["ide/other.js", "", "../page.js", "IDE/page.js"] {
            let err = content(bad)
                .expect_err("refused")
                .to_wire(Surface::of(CONTENT_FUNCTION));
            assert_eq!(err.code, "S210", "{bad}");
            assert!(
                err.message.contains("\"ide/page.js\"")
                    && err.message.contains("\"ide/styles.css\""),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn every_asset_fits_the_console_cap_and_is_scoped_to_ide() {
        for a in &ASSETS {
            assert!(
                a.content.len() < 8 << 20,
                "{} is over the 8 MiB cap",
                a.path
            );
            assert!(a.path.starts_with("ide/"));
            let ext = if a.trigger_type == "console:script" {
                ".js"
            } else {
                ".css"
            };
            assert!(a.path.ends_with(ext), "{} vs {}", a.path, a.trigger_type);
        }
    }

    #[test]
    fn matches_the_published_contract() {
        crate::testkit::assert_matches_contract(
            include_str!("../../tests/fixtures/contract-ide-ui.json"),
            1,
        );
    }
}
