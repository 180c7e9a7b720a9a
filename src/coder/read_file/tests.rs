use crate::testkit::{Jail, assert_redacted, entry_error};
use serde_json::json;

const ID: &str = "coder::read-file";

#[tokio::test]
async fn full_read_returns_content_metadata_and_revision() {
    let j = Jail::new();
    j.write("a.txt", "one\ntwo\n");
    let v = j.call(ID, json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(v["content"], "one\ntwo\n");
    assert_eq!(v["path"], j.path("a.txt").display().to_string());
    assert_eq!(v["size"], 8);
    assert_eq!(v["total_lines"], 2);
    assert_eq!(v["lines_returned"], 2);
    assert_eq!(v["more_lines"], false);
    assert_eq!(v["is_utf8"], true);
    assert_eq!(v["revision"], crate::coder::revision_of(b"one\ntwo\n"));
    assert_eq!(v["results"], serde_json::Value::Null);
    // `failed` counts batch entries: none in single-path mode
    assert_eq!(v["failed"], serde_json::Value::Null);
    assert!(v["mode"].as_u64().unwrap() <= 0o777);
}

#[tokio::test]
async fn path_and_paths_are_exclusive() {
    let j = Jail::new();
    let (c, _) = j.call(ID, json!({})).await.unwrap_err();
    assert_eq!(c, "C210");
    let (c, _) = j
        .call(ID, json!({"path": "a", "paths": ["b"]}))
        .await
        .unwrap_err();
    assert_eq!(c, "C210");
}

#[tokio::test]
async fn over_budget_full_read_names_size_lines_and_recovery() {
    let j = Jail::with(|c| c.code.max_output_bytes = 10);
    j.write("big.txt", "0123456789\nabc\n");
    let (c, m) = j.call(ID, json!({"path": "big.txt"})).await.unwrap_err();
    assert_eq!(c, "C218");
    assert!(m.contains("15 bytes") && m.contains("2 lines"), "{m}");
    assert!(m.contains("line_from") && m.contains("stat: true"), "{m}");
    // a per-call override raises the budget
    let v = j
        .call(ID, json!({"path": "big.txt", "max_output_bytes": 100}))
        .await
        .unwrap();
    assert_eq!(v["content"], "0123456789\nabc\n");
}

#[tokio::test]
async fn per_call_budget_is_clamped_to_max_read_bytes() {
    let j = Jail::with(|c| c.fs.max_read_bytes = 8);
    j.write("f.txt", "0123456789");
    let (c, m) = j
        .call(ID, json!({"path": "f.txt", "max_output_bytes": 1000}))
        .await
        .unwrap_err();
    assert_eq!(c, "C218");
    assert!(m.contains("max_read_bytes"), "{m}");
}

#[tokio::test]
async fn windows_stream_any_part_of_a_file() {
    let j = Jail::with(|c| c.fs.max_read_bytes = 64);
    let body: String = (1..=1000).map(|i| format!("l{i}\n")).collect();
    j.write("long.txt", &body);
    // the file is larger than max_read_bytes, yet a window works
    let v = j
        .call(
            ID,
            json!({"path": "long.txt", "line_from": 500, "line_to": 502}),
        )
        .await
        .unwrap();
    assert_eq!(v["content"], "l500\nl501\nl502\n");
    assert_eq!(v["more_lines"], true);
    assert_eq!(v["total_lines"], serde_json::Value::Null);
    assert_eq!(v["revision"], serde_json::Value::Null);
    let tail = j
        .call(
            ID,
            json!({"path": "long.txt", "line_from": 999, "numbered": true}),
        )
        .await
        .unwrap();
    assert_eq!(tail["content"], "999→l999\n1000→l1000\n");
    assert_eq!(tail["total_lines"], 1000);
    assert_eq!(tail["more_lines"], false);
    // the window cap cuts at a line boundary
    let cut = j
        .call(ID, json!({"path": "long.txt", "line_from": 1}))
        .await
        .unwrap();
    assert_eq!(cut["more_lines"], true);
    assert!(cut["content"].as_str().unwrap().len() <= 64);
}

#[tokio::test]
async fn windows_stat_and_batch_entries_carry_the_whole_files_revision() {
    let j = Jail::new();
    let body: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    j.write("big.txt", &body);
    let whole = crate::coder::revision_of(body.as_bytes());
    let v = j
        .call(
            ID,
            json!({"path": "big.txt", "line_from": 2500, "line_to": 2502}),
        )
        .await
        .unwrap();
    assert_eq!(v["content"], "line 2500\nline 2501\nline 2502\n");
    assert_eq!(v["revision"], whole);
    // the rest of the file was read for the hash, so its length is known
    assert_eq!(v["total_lines"], 5000);
    assert_eq!(v["more_lines"], true);
    let v = j
        .call(ID, json!({"path": "big.txt", "stat": true}))
        .await
        .unwrap();
    assert_eq!(v["revision"], whole);
    let v = j
        .call(
            ID,
            json!({"paths": ["big.txt", {"path": "big.txt", "line_from": 10, "line_to": 10},
                             {"path": "big.txt", "stat": true}, "missing.txt"]}),
        )
        .await
        .unwrap();
    assert_eq!(v["failed"], 1, "{v}");
    let r = v["results"].as_array().unwrap();
    for e in &r[..2] {
        assert_eq!(e["revision"], whole, "{e}");
    }
    assert_eq!(r[2]["revision"], whole);
    assert_eq!(r[3]["success"], false);
    assert_eq!(r[3]["revision"], serde_json::Value::Null);
    // a windowed revision guards an edit of the lines it showed
    let u = j
        .call(
            "coder::update-file",
            json!({"files": [{"path": "big.txt", "expected_revision": whole,
                "ops": [{"op": "update_lines", "from_line": 2501, "to_line": 2501, "content": "changed"}]}]}),
        )
        .await
        .unwrap();
    assert_eq!(u["results"][0]["success"], true, "{u}");
    // ... and a stale one is refused, the message naming the window re-read
    let (c, m) = j
        .call(
            "coder::update-file",
            json!({"files": [{"path": "big.txt", "expected_revision": whole,
                "ops": [{"op": "update_lines", "from_line": 2501, "to_line": 2501, "content": "again"}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(c, "C221", "{m}");
    assert!(m.contains("a windowed coder::read-file"), "{m}");
    assert!(m.contains("line_from/line_to"), "{m}");
}

#[tokio::test]
async fn a_file_over_max_read_bytes_has_no_revision_on_a_window() {
    let j = Jail::with(|c| c.fs.max_read_bytes = 100);
    let body: String = (1..=100).map(|i| format!("l{i}\n")).collect();
    j.write("long.txt", &body);
    let v = j
        .call(
            ID,
            json!({"path": "long.txt", "line_from": 1, "line_to": 1}),
        )
        .await
        .unwrap();
    assert_eq!(v["content"], "l1\n");
    assert_eq!(v["revision"], serde_json::Value::Null);
    let v = j
        .call(ID, json!({"path": "long.txt", "stat": true}))
        .await
        .unwrap();
    assert_eq!(v["revision"], serde_json::Value::Null);
    assert_eq!(v["total_lines"], 100);
}

#[test]
fn the_line_window_schema_says_what_the_code_enforces() {
    let schema = crate::function::schema_of::<super::ReadFileInput>();
    for key in ["line_from", "line_to"] {
        let p = &schema["properties"][key];
        assert_eq!(p["minimum"].as_f64(), Some(1.0), "{key}: {p}");
        assert!(
            p["description"].as_str().unwrap().contains(">= "),
            "{key}: {p}"
        );
    }
    let entry = &schema["$defs"]["ReadTargetSpec"]["properties"]["line_from"];
    assert_eq!(entry["minimum"].as_f64(), Some(1.0), "{entry}");
}

#[tokio::test]
async fn bad_windows_and_flag_combinations_are_c210() {
    let j = Jail::new();
    j.write("a.txt", "x\n");
    for bad in [
        json!({"path": "a.txt", "line_from": 0}),
        json!({"path": "a.txt", "line_to": 0}),
        json!({"path": "a.txt", "line_from": 5, "line_to": 2}),
        json!({"path": "a.txt", "stat": true, "line_from": 1}),
        json!({"path": "a.txt", "stat": true, "numbered": true}),
        json!({"path": "a.txt", "stat": true, "max_output_bytes": 5}),
        json!({"path": "a.txt", "line_from": 1, "max_output_bytes": 5}),
        json!({"path": "a.txt", "encoding": "base64", "numbered": true}),
        json!({"paths": ["a.txt"], "numbered": true}),
    ] {
        let (c, _) = j.call(ID, bad.clone()).await.unwrap_err();
        assert_eq!(c, "C210", "{bad}");
    }
}

#[tokio::test]
async fn stat_probes_without_content() {
    let j = Jail::new();
    j.write("bin", b"a\n\xff\n");
    let v = j
        .call(ID, json!({"path": "bin", "stat": true}))
        .await
        .unwrap();
    assert_eq!(v["content"], serde_json::Value::Null);
    assert_eq!(v["total_lines"], 2);
    assert_eq!(v["is_utf8"], false);
    assert_eq!(v["size"], 4);
    assert!(v["mtime"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_base64_is_exact() {
    let j = Jail::new();
    j.write("bin", b"ok\xfe\n");
    let v = j.call(ID, json!({"path": "bin"})).await.unwrap();
    assert_eq!(v["content"], "ok\u{FFFD}\n");
    assert_eq!(v["is_utf8"], false);
    let b = j
        .call(ID, json!({"path": "bin", "encoding": "base64"}))
        .await
        .unwrap();
    assert_eq!(b["content"], "b2v+Cg==");
    assert_eq!(b["revision"], crate::coder::revision_of(b"ok\xfe\n"));
}

#[tokio::test]
async fn directories_are_the_wrong_type() {
    let j = Jail::new();
    std::fs::create_dir(j.path("d")).unwrap();
    let (c, m) = j.call(ID, json!({"path": "d"})).await.unwrap_err();
    assert_eq!(c, "C212");
    assert!(m.contains("coder::list-folder"));
}

#[tokio::test]
async fn batch_entries_consume_the_budget_in_order() {
    let j = Jail::with(|c| c.code.batch_read_budget_bytes = 12);
    j.write("a", "aaaaa\n"); // 6 bytes
    j.write("b", "bbbbb\n"); // 6 bytes -> budget spent
    j.write("c", "c\n");
    let v = j
        .call(
            ID,
            json!({"paths": ["a", {"path": "b"}, "c", {"path": "c", "stat": true}, "missing"]}),
        )
        .await
        .unwrap();
    let r = v["results"].as_array().unwrap();
    assert_eq!(v["failed"], 2, "{v}");
    assert_eq!(v["content"], serde_json::Value::Null);
    assert_eq!(r[0]["content"], "aaaaa\n");
    assert_eq!(r[1]["content"], "bbbbb\n");
    assert_eq!(r[2]["success"], false);
    assert_eq!(r[2]["error"]["code"], "C218");
    assert!(
        r[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch_read_budget_bytes = 12")
    );
    // stat entries are budget-free
    assert_eq!(r[3]["success"], true);
    assert_eq!(r[3]["total_lines"], 1);
    assert_eq!(r[4]["error"]["code"], "C211");
    assert_eq!(r[4]["path"], "missing");
}

#[tokio::test]
async fn batch_windows_and_numbered_prefixes_count() {
    let j = Jail::with(|c| c.code.batch_read_budget_bytes = 9);
    j.write("n", "x\ny\nz\n");
    let v = j
        .call(
            ID,
            json!({"paths": [{"path": "n", "numbered": true, "line_from": 1}]}),
        )
        .await
        .unwrap();
    assert_eq!(v["failed"], 0);
    let r = &v["results"][0];
    // "1→x\n" is 6 bytes, the next line would exceed 9
    assert_eq!(r["content"], "1→x\n");
    assert_eq!(r["more_lines"], true);
}

#[tokio::test]
async fn denied_path_reads_exactly_like_a_missing_one() {
    let j = Jail::new();
    j.write(".env", "SECRET=1\n");
    j.write("denied/x", "x");
    j.write("ok", "ok\n");
    for (denied, missing) in [(".env", "nope/.env"), ("denied/x", "nope")] {
        let d = j.call(ID, json!({"path": denied})).await;
        let m = j.call(ID, json!({"path": missing})).await;
        assert_redacted(d, denied, m, missing);
        let d = j.call(ID, json!({"path": denied, "stat": true})).await;
        let m = j.call(ID, json!({"path": missing, "stat": true})).await;
        assert_redacted(d, denied, m, missing);
        // a batch of one that failed fails the call with the entry's error
        let d = j.call(ID, json!({"paths": [denied]})).await;
        let m = j.call(ID, json!({"paths": [missing]})).await;
        assert_eq!(d.as_ref().unwrap_err().0, "C211", "{d:?}");
        assert_redacted(d, denied, m, missing);
        // beside an entry that was read, the entry's error, just the same
        let d = j.call(ID, json!({"paths": [denied, "ok"]})).await.unwrap();
        let m = j.call(ID, json!({"paths": [missing, "ok"]})).await.unwrap();
        assert_eq!((&d["failed"], &m["failed"]), (&json!(1), &json!(1)));
        assert_eq!(d["results"][1]["content"], "ok\n");
        assert_redacted(entry_error(&d, 0), denied, entry_error(&m, 0), missing);
    }
    // every entry failed: the first entry's code, each entry's error listed
    let (c, m) = j
        .call(ID, json!({"paths": ["nope/a", "denied/x"]}))
        .await
        .unwrap_err();
    assert_eq!(c, "C211", "{m}");
    assert!(
        m.contains("every entry of the batch failed (2 of 2), nothing was read"),
        "{m}"
    );
    assert!(
        m.contains("nope/a: C211 ") && m.contains("denied/x: C211 "),
        "{m}"
    );
}

#[tokio::test]
async fn base_dir_anchors_and_confines() {
    let j = Jail::new();
    j.write("pkg/src/a.rs", "a\n");
    j.write("other.rs", "o\n");
    let v = j
        .call(ID, json!({"path": "src/a.rs", "base_dir": "pkg"}))
        .await
        .unwrap();
    assert_eq!(v["content"], "a\n");
    let (c, m) = j
        .call(ID, json!({"path": "../other.rs", "base_dir": "pkg"}))
        .await
        .unwrap_err();
    assert_eq!(c, "C220");
    assert!(m.contains("base_dir"), "{m}");
}

#[tokio::test]
async fn fifos_and_devices_are_refused_without_blocking() {
    let j = Jail::new();
    nix::unistd::mkfifo(
        &j.path("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    for payload in [
        json!({"path": "pipe"}),
        json!({"path": "pipe", "stat": true}),
        json!({"path": "pipe", "line_from": 2}),
    ] {
        let (c, m) = j.call(ID, payload).await.unwrap_err();
        assert_eq!(c, "C212", "{m}");
    }
    let (c, m) = j
        .call(
            "coder::update-file",
            json!({"files": [{"path": "pipe", "ops": [{"op": "remove", "from_line": 1, "to_line": 1}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(c, "C212", "{m}");
    // in a batch of reads, the FIFO is its entry's error
    j.write("plain", "p\n");
    let v = j
        .call(ID, json!({"paths": ["pipe", "plain"]}))
        .await
        .unwrap();
    assert_eq!(v["failed"], 1, "{v}");
    assert_eq!(v["results"][0]["error"]["code"], "C212");
    assert_eq!(v["results"][1]["content"], "p\n");
    let (c, _) = j
        .call("shell::fs::read", json!({"path": "pipe"}))
        .await
        .unwrap_err();
    assert_eq!(c, "S212");
    // an unjailed worker can be pointed at a device: refused, not read forever
    let open = Jail::with(|c| {
        c.fs.host_roots.clear();
        c.fs.allow_unjailed = true;
    });
    let (c, _) = open
        .call(ID, json!({"path": "/dev/zero", "line_from": 2}))
        .await
        .unwrap_err();
    assert_eq!(c, "C212");
}

#[tokio::test]
async fn a_batch_answer_carries_no_empty_fields() {
    let j = Jail::new();
    j.write("a.txt", "one\n");
    j.write("b.txt", "two\n");
    let v = j
        .call(ID, json!({"paths": ["a.txt", "b.txt", "missing.txt"]}))
        .await
        .unwrap();
    // only what the batch means: its results and its failure count
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["failed", "results"], "{v}");
    assert_eq!(v["failed"], 1);
    let ok = &v["results"][0];
    assert!(ok.get("error").is_none(), "{ok}");
    assert_eq!(ok["content"], "one\n");
    // a failed entry is its path, success and error
    let bad = v["results"][2].as_object().unwrap();
    let keys: Vec<&String> = bad.keys().collect();
    assert_eq!(keys, ["error", "path", "success"], "{bad:?}");
    assert!(!v.to_string().contains("null"), "{v}");
}
