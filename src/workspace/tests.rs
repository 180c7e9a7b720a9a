use crate::fs::testkit::{Kit, denied_fixtures};
use base64::Engine;
use serde_json::json;

#[tokio::test]
async fn roots_validate_and_list_go_through_the_policy() {
    let k = Kit::jailed();
    let root = k.root.display().to_string();
    let r = k.ok("shell::workspace::roots", json!({})).await;
    assert_eq!(r["roots"], json!([root]));
    k.dir("b");
    k.dir("a");
    k.file("file.txt", "x");
    k.dir("blocked"); // denylisted
    let l = k.ok("shell::workspace::list", json!({"path": root})).await;
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(l["truncated"], false);
    // paging with a cursor
    let p1 = k
        .ok(
            "shell::workspace::list",
            json!({"path": root, "page_size": 1}),
        )
        .await;
    assert_eq!(p1["truncated"], true);
    assert_eq!(p1["entries"][0]["name"], "a");
    let p2 = k
        .ok(
            "shell::workspace::list",
            json!({"path": root, "page_size": 1, "cursor": p1["next_cursor"]}),
        )
        .await;
    assert_eq!(p2["entries"][0]["name"], "b");
    assert_eq!(p2["truncated"], false);
    // validate refuses what the policy refuses
    let outside = k.outside.path().display().to_string();
    assert_eq!(
        k.err("shell::workspace::validate", json!({"path": outside}))
            .await
            .code,
        "S215"
    );
    assert_eq!(
        k.err("shell::workspace::validate", json!({"path": "file.txt"}))
            .await
            .code,
        "S212"
    );
    let v = k
        .ok("shell::workspace::validate", json!({"path": "a"}))
        .await;
    assert_eq!(v["path"], k.root.join("a").display().to_string());
    crate::fs::testkit::redaction_holds("shell::workspace::validate", |p| json!({"path": p})).await;
    crate::fs::testkit::redaction_holds("shell::workspace::list", |p| json!({"path": p})).await;
}

#[tokio::test]
async fn unjailed_roots_are_the_working_dir_home_and_slash_minus_denied() {
    let k = Kit::unjailed();
    let r = k.ok("shell::workspace::roots", json!({})).await;
    let roots: Vec<&str> = r["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(roots.contains(&"/"), "{roots:?}");
    let wd = k
        .services
        .live
        .snapshot()
        .working_dir
        .canonicalize()
        .unwrap();
    assert_eq!(roots[0], wd.display().to_string());
    // unjailed, validate takes absolute paths outside the denylist
    let v = k
        .ok("shell::workspace::validate", json!({"path": "/"}))
        .await;
    assert_eq!(v["path"], "/");
    let denied = k.root.join("blocked");
    std::fs::create_dir_all(&denied).unwrap();
    assert_eq!(
        k.err(
            "shell::workspace::validate",
            json!({"path": denied.display().to_string()})
        )
        .await
        .code,
        "S211"
    );
    // a listing of the parent leaves the denylisted directory out
    let l = k
        .ok(
            "shell::workspace::list",
            json!({"path": k.root.display().to_string()}),
        )
        .await;
    assert!(!l.to_string().contains("\"blocked\""), "{l}");
}

#[tokio::test]
async fn read_bytes_chunks_a_file_and_redacts_like_missing() {
    let k = Kit::jailed();
    let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(k.root.join("img.bin"), &body).unwrap();
    let mut got = Vec::new();
    let mut offset = 0u64;
    loop {
        let r = k
            .ok(
                "shell::workspace::read-bytes",
                json!({"path": "img.bin", "offset": offset, "length": 4096}),
            )
            .await;
        assert_eq!(r["size"], 10_000);
        let chunk = base64::engine::general_purpose::STANDARD
            .decode(r["content"].as_str().unwrap())
            .unwrap();
        offset += chunk.len() as u64;
        got.extend(chunk);
        if r["eof"] == true {
            break;
        }
    }
    assert_eq!(got, body);
    // the file shrinks between calls: past the end is an empty eof chunk
    std::fs::write(k.root.join("img.bin"), b"tiny").unwrap();
    let r = k
        .ok(
            "shell::workspace::read-bytes",
            json!({"path": "img.bin", "offset": 8192}),
        )
        .await;
    assert_eq!(
        (r["length"].as_u64(), r["eof"].as_bool()),
        (Some(0), Some(true))
    );
    // a protected file reads exactly like a missing one
    let denied = denied_fixtures(&k);
    for d in denied.iter().filter(|d| !d.ends_with("blocked")) {
        let twin = crate::fs::testkit::missing_twin(&k, "nope", d);
        let missing = k
            .err("shell::workspace::read-bytes", json!({"path": twin}))
            .await;
        let e = k
            .err("shell::workspace::read-bytes", json!({"path": d}))
            .await;
        assert_eq!(e.code, missing.code);
        assert_eq!(
            e.message.replace(&format!("{d:?}"), "<P>"),
            missing.message.replace(&format!("{twin:?}"), "<P>")
        );
    }
}
