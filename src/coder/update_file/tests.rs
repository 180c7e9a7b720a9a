use crate::testkit::{Jail, assert_redacted, entry_error};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

const ID: &str = "coder::update-file";

/// The entry of a one-file edit that was answered (`failed` says whether
/// the entry failed: a batch of one whose entry failed fails the call).
async fn edit(j: &Jail, path: &str, ops: Value) -> Value {
    let v = j
        .call(ID, json!({"files": [{"path": path, "ops": ops}]}))
        .await
        .unwrap();
    assert_eq!(v["failed"], 0, "{v}");
    v["results"][0].clone()
}

/// The `(code, message)` a one-file edit fails with: the call's own error,
/// the only entry's.
async fn edit_err(j: &Jail, path: &str, ops: Value) -> (String, String) {
    j.call(ID, json!({"files": [{"path": path, "ops": ops}]}))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn line_ops_use_original_numbers_and_echo_context() {
    let j = Jail::new();
    j.write("f", "1\n2\n3\n4\n5\n6\n");
    let r = edit(
        &j,
        "f",
        json!([
            {"op": "insert", "at_line": 1, "content": "top\n"},
            {"op": "update_lines", "from_line": 3, "to_line": 4, "content": "three-four"},
            {"op": "remove", "from_line": 6, "to_line": 6}
        ]),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(j.read("f"), b"top\n1\n2\nthree-four\n5\n");
    assert_eq!(r["applied"], 3);
    assert_eq!(r["new_line_count"], 5);
    let echoes = r["echoes"].as_array().unwrap();
    assert_eq!(echoes[1]["op_index"], 1);
    assert_eq!(echoes[1]["from_line"], 2);
    assert_eq!(echoes[1]["lines"], json!(["1", "2", "three-four", "5"]));
    assert_eq!(r["revision"], crate::coder::revision_of(&j.read("f")));
}

#[tokio::test]
async fn overlapping_or_out_of_range_ops_write_nothing() {
    let j = Jail::new();
    j.write("f", "a\nb\nc\n");
    for ops in [
        json!([{"op": "remove", "from_line": 1, "to_line": 2}, {"op": "update_lines", "from_line": 2, "to_line": 3, "content": "x"}]),
        json!([{"op": "remove", "from_line": 3, "to_line": 9}]),
        json!([{"op": "insert", "at_line": 0, "content": "x"}]),
    ] {
        let (c, m) = edit_err(&j, "f", ops).await;
        assert_eq!(c, "C210", "{m}");
    }
    assert_eq!(j.read("f"), b"a\nb\nc\n");
}

#[tokio::test]
async fn replace_ops_expand_captures_and_echo_sites() {
    let j = Jail::new();
    j.write("f", "let a = old(1);\nlet b = old(2);\n");
    let r = edit(
        &j,
        "f",
        json!([{"op": "replace", "pattern": r"old\((\d)\)", "replacement": "new(${1}0)", "expect_matches": 2}]),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(j.read("f"), b"let a = new(10);\nlet b = new(20);\n");
    let echoes = r["echoes"].as_array().unwrap();
    assert_eq!(echoes.len(), 2);
    assert_eq!(echoes[1]["from_line"], 2);
    assert_eq!(echoes[1]["total_replacements"], 2);
}

#[tokio::test]
async fn expect_matches_mismatch_and_bad_references_write_nothing() {
    let j = Jail::new();
    j.write("f", "x x\n");
    let (c, m) = edit_err(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "x", "replacement": "y", "expect_matches": 1}]),
    )
    .await;
    assert_eq!(c, "C210");
    assert!(m.contains("matched 2"), "{m}");
    // a bad reference is refused even though the pattern matches nothing
    let (c, m) = edit_err(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "(zzz)", "replacement": "$1a"}]),
    )
    .await;
    assert_eq!(c, "C210", "{m}");
    // expect_matches: 0 asserts absence
    let r = edit(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "zzz", "replacement": "", "expect_matches": 0}]),
    )
    .await;
    assert_eq!(r["success"], true);
    assert_eq!(j.read("f"), b"x x\n");
}

#[tokio::test]
async fn multi_line_regions_echo_first_and_last_lines() {
    let j = Jail::new();
    j.write("f", "keep\nstart\na\nb\nend\nkeep\n");
    let r = edit(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "start.*?end", "replacement": "S\nm1\nm2\nE", "dot_matches_newline": true}]),
    )
    .await;
    let e = &r["echoes"][0];
    assert_eq!(e["lines"], json!(["S", "E"]));
    assert_eq!(e["elided"], 2);
    assert_eq!(e["elided_after"], 1);
    assert_eq!(e["from_line"], 2);
}

#[tokio::test]
async fn a_large_region_echo_marks_where_its_gap_is() {
    let j = Jail::new();
    j.write("f", "a\nb\nc\n");
    let new: String = (1..=20).map(|i| format!("n{i}\n")).collect();
    let r = edit(
        &j,
        "f",
        json!([{"op": "update_lines", "from_line": 2, "to_line": 2, "content": new}]),
    )
    .await;
    let e = &r["echoes"][0];
    // region: line 1 (context), n1..n20 at lines 2..21, line 22 (context)
    assert_eq!(e["from_line"], 1);
    let lines: Vec<&str> = e["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let (before, after) = lines.split_at(e["elided_after"].as_u64().unwrap() as usize);
    let elided = e["elided"].as_u64().unwrap() as usize;
    // numbering by the documented rule gives every line its true number
    let body = j.read("f");
    let file: Vec<&str> = std::str::from_utf8(&body).unwrap().lines().collect();
    for (i, l) in before.iter().enumerate() {
        assert_eq!(*l, file[i], "line {}", 1 + i);
    }
    let resume = before.len() + elided;
    for (i, l) in after.iter().enumerate() {
        assert_eq!(*l, file[resume + i], "line {}", 1 + resume + i);
    }
    assert_eq!(before.len() + elided + after.len(), 22);
    // a consecutive echo has no gap fields
    let r = edit(
        &j,
        "f",
        json!([{"op": "update_lines", "from_line": 1, "to_line": 1, "content": "A"}]),
    )
    .await;
    assert_eq!(r["echoes"][0]["elided"], serde_json::Value::Null);
    assert_eq!(r["echoes"][0]["elided_after"], serde_json::Value::Null);
}

#[tokio::test]
async fn edit_ops_apply_in_order_all_or_none() {
    let j = Jail::new();
    j.write("f.rs", "fn a() {}\nfn b() {}\n");
    let r = edit(
        &j,
        "f.rs",
        json!([
            {"op": "edit", "old_text": "fn a() {}", "new_text": "fn a2() {}"},
            {"op": "edit", "old_text": "fn a2() {}\nfn b", "new_text": "fn a3() {}\nfn b"}
        ]),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(j.read("f.rs"), b"fn a3() {}\nfn b() {}\n");
    let (c, m) = edit_err(
        &j,
        "f.rs",
        json!([
            {"op": "edit", "old_text": "fn a3() {}", "new_text": "gone"},
            {"op": "edit", "old_text": "not there", "new_text": "x"}
        ]),
    )
    .await;
    assert_eq!(c, "C210");
    assert!(m.contains("ops[1]"), "{m}");
    assert_eq!(j.read("f.rs"), b"fn a3() {}\nfn b() {}\n");
}

#[tokio::test]
async fn crlf_bom_missing_final_newline_and_mode_are_kept() {
    let j = Jail::new();
    let p = j.write("w.txt", "\u{FEFF}one\r\ntwo\r\nthree");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let r = edit(
        &j,
        "w.txt",
        json!([
            {"op": "insert", "at_line": 2, "content": "one-and-a-half\n"},
            {"op": "edit", "old_text": "two\r\nthree", "new_text": "TWO\nTHREE"}
        ]),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        j.read("w.txt"),
        "\u{FEFF}one\r\none-and-a-half\r\nTWO\r\nTHREE".as_bytes()
    );
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

#[tokio::test]
async fn appending_to_a_file_without_final_newline() {
    let j = Jail::new();
    j.write("f", "a\nb");
    let r = edit(
        &j,
        "f",
        json!([{"op": "insert", "at_line": 3, "content": "c"}]),
    )
    .await;
    assert_eq!(r["success"], true);
    assert_eq!(j.read("f"), b"a\nb\nc");
}

#[tokio::test]
async fn non_utf8_files_are_refused_not_corrupted() {
    let j = Jail::new();
    j.write("bin", b"ok\n\xff\xfe\n");
    let (c, m) = edit_err(
        &j,
        "bin",
        json!([{"op": "remove", "from_line": 1, "to_line": 1}]),
    )
    .await;
    assert_eq!(c, "C210");
    assert!(
        m.contains("offset 3") && m.contains("shell::fs::write"),
        "{m}"
    );
    assert_eq!(j.read("bin"), b"ok\n\xff\xfe\n");
}

#[tokio::test]
async fn stale_revision_is_c221_and_fresh_revision_chains() {
    let j = Jail::new();
    j.write("f", "v1\n");
    let stale = crate::coder::revision_of(b"v0\n");
    let (c, m) = j
        .call(ID, json!({"files": [{"path": "f", "expected_revision": stale, "ops": [{"op": "edit", "old_text": "v1", "new_text": "v2"}]}]}))
        .await
        .unwrap_err();
    assert_eq!(c, "C221", "{m}");
    assert!(m.contains("nothing was written"), "{m}");
    assert_eq!(j.read("f"), b"v1\n");
    let fresh = crate::coder::revision_of(b"v1\n");
    let v = j
        .call(ID, json!({"files": [{"path": "f", "expected_revision": fresh, "ops": [{"op": "edit", "old_text": "v1", "new_text": "v2"}]}]}))
        .await
        .unwrap();
    let next = v["results"][0]["revision"].clone();
    let v = j
        .call(ID, json!({"files": [{"path": "f", "expected_revision": next, "ops": [{"op": "edit", "old_text": "v2", "new_text": "v3"}]}]}))
        .await
        .unwrap();
    assert_eq!(v["results"][0]["success"], true);
    assert_eq!(j.read("f"), b"v3\n");
}

#[tokio::test]
async fn a_failing_file_does_not_stop_the_others() {
    let j = Jail::new();
    j.write("good", "a\n");
    let v = j
        .call(
            ID,
            json!({"files": [
                {"path": "missing", "ops": [{"op": "remove", "from_line": 1, "to_line": 1}]},
                {"path": "good", "ops": [{"op": "update_lines", "from_line": 1, "to_line": 1, "content": "b"}]}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(v["failed"], 1, "{v}");
    assert_eq!(v["results"][0]["error"]["code"], "C211");
    assert_eq!(v["results"][1]["success"], true);
    assert_eq!(j.read("good"), b"b\n");
    // when every file fails, the call fails: the first entry's code, and
    // each entry's path and error in the message
    let stale = crate::coder::revision_of(b"a\n");
    let (c, m) = j
        .call(
            ID,
            json!({"files": [
                {"path": "missing", "ops": [{"op": "remove", "from_line": 1, "to_line": 1}]},
                {"path": "good", "expected_revision": stale, "ops": [{"op": "update_lines", "from_line": 1, "to_line": 1, "content": "c"}]}
            ]}),
        )
        .await
        .unwrap_err();
    assert_eq!(c, "C211", "{m}");
    assert!(
        m.contains("every entry of the batch failed (2 of 2), nothing was changed"),
        "{m}"
    );
    assert!(m.contains("missing: C211 path not found"), "{m}");
    assert!(m.contains("good: C221 \"good\" changed since"), "{m}");
    assert_eq!(j.read("good"), b"b\n");
}

#[tokio::test]
async fn echo_budget_is_bounded() {
    let j = Jail::new();
    let long = "x".repeat(250);
    let body: String = (0..200).map(|_| format!("{long}\n")).collect();
    j.write("f", &body);
    let ops: Vec<Value> = (1..=200)
        .step_by(5)
        .map(|l| json!({"op": "update_lines", "from_line": l, "to_line": l, "content": "y"}))
        .collect();
    let r = edit(&j, "f", json!(ops)).await;
    assert_eq!(r["success"], true);
    assert_eq!(r["echoes_truncated"], true);
    assert!(r["echoes"].to_string().len() < 6000);
}

#[tokio::test]
async fn ops_are_validated_by_the_schema() {
    let j = Jail::new();
    j.write("f", "a\n");
    let (c, m) = j
        .call(
            ID,
            json!({"files": [{"path": "f", "ops": [{"op": "frobnicate"}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(c, "C210");
    assert!(m.contains("files"), "{m}");
}

#[tokio::test]
async fn denied_path_reads_exactly_like_a_missing_one() {
    let j = Jail::new();
    j.write(".env", "A=1\n");
    j.write("denied/x", "x\n");
    let ops = json!([{"op": "remove", "from_line": 1, "to_line": 1}]);
    j.write("ok", "x\n");
    // an entry that works and changes nothing
    let ok =
        json!({"path": "ok", "ops": [{"op": "replace", "pattern": "nomatch", "replacement": ""}]});
    for (denied, missing) in [(".env", "nope/.env"), ("denied/x", "nope")] {
        // alone in its batch: the call fails with the entry's error
        let d = j
            .call(ID, json!({"files": [{"path": denied, "ops": ops}]}))
            .await;
        let m = j
            .call(ID, json!({"files": [{"path": missing, "ops": ops}]}))
            .await;
        assert_eq!(d.as_ref().unwrap_err().0, "C211", "{d:?}");
        assert_redacted(d, denied, m, missing);
        // beside an entry that works: the entry's error, just the same
        let d = j
            .call(ID, json!({"files": [{"path": denied, "ops": ops}, ok]}))
            .await
            .unwrap();
        let m = j
            .call(ID, json!({"files": [{"path": missing, "ops": ops}, ok]}))
            .await
            .unwrap();
        assert_eq!((&d["failed"], &m["failed"]), (&json!(1), &json!(1)));
        assert_redacted(entry_error(&d, 0), denied, entry_error(&m, 0), missing);
    }
    assert_eq!(j.read(".env"), b"A=1\n");
    assert_eq!(j.read("denied/x"), b"x\n");
}

#[tokio::test]
async fn ops_that_change_nothing_write_nothing_and_say_so() {
    use std::os::unix::fs::MetadataExt;
    let j = Jail::new();
    let p = j.write("f", "alpha\nbeta\n");
    let before = std::fs::metadata(&p).unwrap();
    let r = edit(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "nomatch", "replacement": "x"}]),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["changed"], false, "{r}");
    let after = std::fs::metadata(&p).unwrap();
    assert_eq!(
        (before.ino(), before.mtime(), before.mtime_nsec()),
        (after.ino(), after.mtime(), after.mtime_nsec())
    );
    let r = edit(
        &j,
        "f",
        json!([{"op": "replace", "pattern": "beta", "replacement": "gamma"}]),
    )
    .await;
    assert_eq!(r["changed"], true, "{r}");
    assert_eq!(j.read("f"), b"alpha\ngamma\n");
}

/// A guarded edit after another writer inserted a line above it: the
/// refusal says what changed and where the lines went; asked to, the ops
/// are moved over; a changed target is never moved.
#[tokio::test]
async fn a_stale_edit_says_what_changed_and_rebases_when_asked() {
    let j = Jail::new();
    let body: String = (1..=130).map(|i| format!("line {i}\n")).collect();
    j.write("m.py", &body);
    // the caller read a window: the worker served that revision
    let r = j
        .call(
            "coder::read-file",
            json!({"path": "m.py", "line_from": 111, "line_to": 128}),
        )
        .await
        .unwrap();
    let seen = r["revision"].as_str().unwrap().to_string();
    // another writer inserts a line at the top
    std::fs::write(j.path("m.py"), format!("# header\n{body}")).unwrap();
    let guarded = |rebase: bool| {
        json!({"files": [{"path": "m.py", "expected_revision": seen, "rebase_lines": rebase,
            "ops": [{"op": "update_lines", "from_line": 111, "to_line": 128, "content": "new body\n"}]}]})
    };
    let (code, msg) = j.call(ID, guarded(false)).await.unwrap_err();
    assert_eq!(code, "C221");
    assert!(msg.contains("1 line inserted before your line 1"), "{msg}");
    assert!(
        msg.contains("ops[0] lines 111–128 are now 112–129, unchanged"),
        "{msg}"
    );
    assert!(msg.contains("rebase_lines: true"), "{msg}");
    assert!(msg.contains("nothing was written"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(j.path("m.py")).unwrap(),
        format!("# header\n{body}")
    );
    // asked to: the ops land on the lines' new numbers
    let v = j.call(ID, guarded(true)).await.unwrap();
    let e = &v["results"][0];
    assert_eq!(e["success"], true, "{v}");
    assert_eq!(e["rebased"], true, "{v}");
    assert_eq!(e["rebased_from"], seen.as_str(), "{v}");
    let now = std::fs::read_to_string(j.path("m.py")).unwrap();
    let lines: Vec<&str> = now.lines().collect();
    assert_eq!(lines[0], "# header");
    assert_eq!(lines[110], "line 110");
    assert_eq!(lines[111], "new body");
    assert_eq!(lines[112], "line 129");
    // the write's revision chains: an edit against it after another
    // writer changed the targeted line is refused even when asked to rebase
    let chained = e["revision"].as_str().unwrap().to_string();
    std::fs::write(j.path("m.py"), now.replace("line 110\n", "line one-ten\n")).unwrap();
    let (code, msg) = j
        .call(
            ID,
            json!({"files": [{"path": "m.py", "expected_revision": chained, "rebase_lines": true,
                "ops": [{"op": "remove", "from_line": 110, "to_line": 111}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(code, "C221");
    assert!(msg.contains("your line 111 replaced by 1 line"), "{msg}");
    assert!(msg.contains("were changed by the other writer"), "{msg}");
    assert!(!msg.contains("rebase_lines: true"), "{msg}");
    // a revision the worker never served: the plain refusal
    let (code, msg) = j
        .call(
            ID,
            json!({"files": [{"path": "m.py", "expected_revision": "0".repeat(64), "rebase_lines": true,
                "ops": [{"op": "remove", "from_line": 1, "to_line": 1}]}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(code, "C221");
    assert!(msg.contains("changed since it was read"), "{msg}");
}
