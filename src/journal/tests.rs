use crate::testkit::Jail;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

async fn ok(j: &Jail, id: &str, payload: Value) -> Value {
    j.call(id, payload.clone())
        .await
        .unwrap_or_else(|e| panic!("{id} {payload}: {e:?}"))
}

fn first_change(v: &Value) -> String {
    v["results"][0]["change_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no change_id in {v}"))
        .to_string()
}

async fn diff(j: &Jail, id: &str) -> Value {
    ok(j, "coder::change-diff", json!({"change_id": id})).await
}

fn restart(j: &Jail) {
    j.services.journals.forget(j.journal.path());
}

#[tokio::test]
async fn a_turn_is_listed_diffed_byte_exact_and_reverted_both_ways() {
    let j = Jail::new();
    let t = json!("turn-1");
    let created = ok(
        &j,
        "coder::create-file",
        json!({"files": [{"path": "a.txt", "content": "\u{feff}one\r\ntwo\r\n", "mode": "0600"}], "turn_id": t, "session_id": "s1"}),
    )
    .await;
    let c1 = first_change(&created);
    let u1 = ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "a.txt", "ops": [{"op": "replace", "pattern": "one", "replacement": "uno"}]}], "turn_id": t, "session_id": "s1"}),
    )
    .await;
    let c2 = first_change(&u1);
    let u2 = ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "a.txt", "ops": [{"op": "replace", "pattern": "two", "replacement": "dos"}]}], "turn_id": t, "session_id": "s1"}),
    )
    .await;
    let c3 = first_change(&u2);
    let m = ok(
        &j,
        "coder::move",
        json!({"files": [{"from": "a.txt", "to": "b/a.txt"}], "turn_id": t, "session_id": "s1"}),
    )
    .await;
    let c4 = first_change(&m);
    // another session's change is its own turn
    ok(
        &j,
        "shell::fs::write",
        json!({"path": "other.bin", "content": "x", "session_id": "s2"}),
    )
    .await;

    let list = ok(&j, "shell::turns::list", json!({"session_id": "s1"})).await;
    let turns = list["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{list}");
    // under a directory: only the changes there (a move counts by either end)
    let b = ok(&j, "shell::turns::list", json!({"under": "b"})).await;
    let ids: Vec<&str> = b["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["changes"].as_array().unwrap())
        .map(|c| c["change_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![c4.as_str()], "{b}");
    let all = ok(&j, "shell::turns::list", json!({"under": "."})).await;
    assert_eq!(all["turns"].as_array().unwrap().len(), 2, "{all}");
    assert_eq!(turns[0]["turn_id"], "turn-1");
    let ids: Vec<&str> = turns[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![c1.as_str(), c2.as_str(), c3.as_str(), c4.as_str()]
    );
    let kinds: Vec<&str> = turns[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["created", "modified", "modified", "moved"]);

    // byte-exact diffs, also after a restart
    restart(&j);
    let d = diff(&j, &c2).await;
    assert_eq!(d["old_contents"], "\u{feff}one\r\ntwo\r\n");
    assert_eq!(d["new_contents"], "\u{feff}uno\r\ntwo\r\n");
    assert_eq!(d["is_binary"], false);
    let d = diff(&j, &c1).await;
    assert_eq!(d["old_contents"], "");
    assert_eq!(d["new_contents"], "\u{feff}one\r\ntwo\r\n");
    // and say what happened, by whom
    assert_eq!(d["kind"], "created");
    assert_eq!(d["function_id"], "coder::create-file");
    assert_eq!(d["session_id"], "s1");
    assert_eq!(d["turn_id"], "turn-1");
    assert!(d["time_ms"].as_u64().unwrap() > 0);
    assert!(d.get("from_path").is_none());
    let d = diff(&j, &c2).await;
    assert_eq!(
        (d["kind"].as_str(), d["function_id"].as_str()),
        (Some("modified"), Some("coder::update-file"))
    );
    let d = diff(&j, &c4).await;
    assert_eq!(d["kind"], "moved");
    assert!(d["from_path"].as_str().unwrap().ends_with("/a.txt"), "{d}");
    assert!(d["path"].as_str().unwrap().ends_with("/b/a.txt"), "{d}");

    // revert the turn: the file is gone from b/ and a.txt does not exist
    // (it was created in the turn)
    let dry = ok(
        &j,
        "shell::turns::revert",
        json!({"turn_id": "turn-1", "dry_run": true}),
    )
    .await;
    assert_eq!(dry["reverted"], false);
    assert!(j.exists("b/a.txt"), "dry run wrote nothing");
    let r = ok(&j, "shell::turns::revert", json!({"turn_id": "turn-1"})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert!(!j.exists("a.txt") && !j.exists("b/a.txt"));
    // revert the revert: forward again, exact bytes and mode
    let redo = r["revert_turn_id"].as_str().unwrap();
    let r2 = ok(&j, "shell::turns::revert", json!({"turn_id": redo})).await;
    assert_eq!(r2["reverted"], true, "{r2}");
    assert_eq!(j.read("b/a.txt"), "\u{feff}uno\r\ndos\r\n".as_bytes());
    let mode = std::fs::metadata(j.path("b/a.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn a_file_edited_by_hand_makes_the_revert_refuse_and_write_nothing() {
    let j = Jail::new();
    j.write("f.txt", "base\n");
    let u = ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "f.txt", "ops": [{"op": "replace", "pattern": "base", "replacement": "agent"}]}]}),
    )
    .await;
    let c = first_change(&u);
    std::fs::write(j.path("f.txt"), "by hand\n").unwrap();
    let r = ok(&j, "shell::turns::revert", json!({"change_id": c})).await;
    assert_eq!(r["reverted"], false);
    let conflicts = r["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{r}");
    assert_eq!(conflicts[0]["path"], j.path("f.txt").display().to_string());
    assert_eq!(
        conflicts[0]["current_revision"],
        crate::coder::revision_of(b"by hand\n")
    );
    assert_eq!(j.read("f.txt"), b"by hand\n");
    // a deleted file comes back with its mode
    j.write("g.txt", "keep\n");
    std::fs::set_permissions(j.path("g.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let d = ok(&j, "coder::delete-file", json!({"paths": ["g.txt"]})).await;
    let c = first_change(&d);
    let r = ok(&j, "shell::turns::revert", json!({"change_id": c})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert_eq!(j.read("g.txt"), b"keep\n");
    let mode = std::fs::metadata(j.path("g.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
}

#[tokio::test]
async fn non_utf8_is_binary_and_unknown_ids_and_tightened_policy_read_alike() {
    let j = Jail::new();
    j.write("bin", [0xffu8, 0xfe, 0x00]);
    let v = ok(
        &j,
        "shell::fs::write",
        json!({"path": "bin", "content": "text"}),
    )
    .await;
    let c = v["change_id"].as_str().unwrap().to_string();
    let d = diff(&j, &c).await;
    assert_eq!(d["is_binary"], true);
    assert!(d["old_contents"].is_null() && d["new_contents"].is_null());
    // unknown id
    let (code, unknown) = j
        .call("coder::change-diff", json!({"change_id": "nope-1"}))
        .await
        .unwrap_err();
    assert_eq!(code, "C211");
    assert!(unknown.contains("shell::turns::list"), "{unknown}");
    // the same journal under a policy that now denies the path
    let journal = j.journal.path().to_path_buf();
    let root = j.root.clone();
    let tight = Jail::with(|cfg| {
        cfg.fs.host_roots = vec![root.clone()];
        cfg.fs.denylist_paths = vec![root.join("bin")];
        cfg.turns.data_dir = journal.clone();
    });
    let (code2, msg) = tight
        .call("coder::change-diff", json!({"change_id": c}))
        .await
        .unwrap_err();
    assert_eq!(code2, "C211");
    assert_eq!(msg.replace(&c, "<id>"), unknown.replace("nope-1", "<id>"));
}

#[tokio::test]
async fn the_blob_cap_evicts_oldest_bodies_first_and_dedupes() {
    let j = Jail::with(|cfg| cfg.turns.max_blob_bytes = 3000);
    let mut ids = Vec::new();
    for i in 0..6 {
        let body = format!("{i}").repeat(1000);
        let v = ok(
            &j,
            "coder::create-file",
            json!({"files": [{"path": format!("f{i}"), "content": body}]}),
        )
        .await;
        ids.push(first_change(&v));
    }
    let list = ok(&j, "shell::turns::list", json!({"limit": 10})).await;
    let avail: Vec<bool> = list["turns"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|t| t["changes"][0]["diff_available"].as_bool().unwrap())
        .collect();
    // oldest first lose their bodies; the newest stay
    assert_eq!(avail, vec![false, false, false, true, true, true], "{list}");
    assert_eq!(
        j.call("coder::change-diff", json!({"change_id": ids[0]}))
            .await
            .unwrap_err()
            .0,
        "C211"
    );
    diff(&j, &ids[5]).await;
    assert_eq!(
        std::fs::read_dir(j.journal.path().join("blobs"))
            .unwrap()
            .count(),
        3
    );
    // identical content is stored once
    let k = Jail::new();
    let same = "same content\n";
    ok(
        &k,
        "coder::create-file",
        json!({"files": [{"path": "s1", "content": same}, {"path": "s2", "content": same}]}),
    )
    .await;
    let blobs = std::fs::read_dir(k.journal.path().join("blobs"))
        .unwrap()
        .count();
    assert_eq!(blobs, 1, "one body for both");
}

#[tokio::test]
async fn a_torn_last_line_costs_only_the_last_change() {
    let j = Jail::new();
    let a = first_change(
        &ok(
            &j,
            "coder::create-file",
            json!({"files": [{"path": "a", "content": "A"}]}),
        )
        .await,
    );
    // b replaces a's body: its refs name a body before and one after
    let b = first_change(
        &ok(
            &j,
            "coder::update-file",
            json!({"files": [{"path": "a", "ops": [{"op": "replace", "pattern": "A", "replacement": "B"}]}]}),
        )
        .await,
    );
    let refs = j.journal.path().join("refs");
    let seq_b = b
        .rsplit_once('-')
        .unwrap()
        .1
        .split('.')
        .next()
        .unwrap()
        .to_string();
    assert!(refs.join(format!("{seq_b}.before")).exists());
    restart(&j);
    // a kill -9 in the middle of appending b's line
    let log = j.journal.path().join("journal.log");
    let len = std::fs::metadata(&log).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    f.set_len(len - 7).unwrap();
    drop(f);
    assert_eq!(diff(&j, &a).await["new_contents"], "A");
    assert_eq!(
        j.call("coder::change-diff", json!({"change_id": b}))
            .await
            .unwrap_err()
            .0,
        "C211"
    );
    // and the journal goes on
    let c = first_change(
        &ok(
            &j,
            "coder::create-file",
            json!({"files": [{"path": "c", "content": "C"}]}),
        )
        .await,
    );
    assert_eq!(diff(&j, &c).await["new_contents"], "C");
    // c took b's number: the refs b left are gone or replaced, none trusted
    assert!(c.contains(&format!("-{seq_b}.")), "{c} reuses {seq_b}");
    assert!(!refs.join(format!("{seq_b}.before")).exists());
    let after = std::fs::read(refs.join(format!("{seq_b}.after"))).unwrap();
    assert_eq!(after, b"C");
}

#[tokio::test]
async fn a_recursive_delete_is_one_turn_that_reverts_the_whole_tree() {
    let j = Jail::new();
    j.write("tree/a.txt", "A\n");
    j.write("tree/sub/b.txt", "B\n");
    let d = ok(
        &j,
        "coder::delete-file",
        json!({"paths": ["tree"], "recursive": true, "turn_id": "rm-tree"}),
    )
    .await;
    assert_eq!(d["results"][0]["removed"], true, "{d}");
    assert!(!j.exists("tree"));
    let list = ok(&j, "shell::turns::list", json!({})).await;
    assert_eq!(list["turns"][0]["turn_id"], "rm-tree");
    assert_eq!(
        list["turns"][0]["changes"].as_array().unwrap().len(),
        2,
        "{list}"
    );
    let r = ok(&j, "shell::turns::revert", json!({"turn_id": "rm-tree"})).await;
    assert_eq!(r["reverted"], true, "{r}");
    assert_eq!(j.read("tree/a.txt"), b"A\n");
    assert_eq!(j.read("tree/sub/b.txt"), b"B\n");
}

#[tokio::test]
async fn a_body_written_with_its_hash_is_journaled_under_that_hash() {
    // create-file and update-file hand the write layer the SHA-256 they
    // answer as `revision`; the record, the blob and the answer must agree
    // with the bytes on disk.
    let j = Jail::new();
    let created = ok(
        &j,
        "coder::create-file",
        json!({"files": [{"path": "h.txt", "content": "alpha\nbeta\n"}]}),
    )
    .await;
    let updated = ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "h.txt", "ops": [{"op": "replace", "pattern": "beta", "replacement": "gamma"}]}]}),
    )
    .await;
    let list = ok(&j, "shell::turns::list", json!({"limit": 10})).await;
    let changes: Vec<&Value> = list["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["changes"].as_array().unwrap())
        .collect();
    for (answer, bytes) in [
        (&created, b"alpha\nbeta\n".as_slice()),
        (&updated, b"alpha\ngamma\n".as_slice()),
    ] {
        let id = first_change(answer);
        let revision = answer["results"][0]["revision"].as_str().unwrap();
        assert_eq!(revision, crate::coder::revision_of(bytes), "{answer}");
        let change = changes
            .iter()
            .find(|c| c["change_id"] == json!(id))
            .unwrap_or_else(|| panic!("{id} not listed: {list}"));
        assert_eq!(change["after_revision"], json!(revision), "{change}");
        let d = diff(&j, &id).await;
        assert_eq!(
            d["new_contents"],
            json!(std::str::from_utf8(bytes).unwrap())
        );
    }
    assert_eq!(j.read("h.txt"), b"alpha\ngamma\n");
    // after a restart the blob is read back and re-checked against that hash
    restart(&j);
    let d = diff(&j, &first_change(&updated)).await;
    assert_eq!(d["old_contents"], json!("alpha\nbeta\n"));
    assert_eq!(d["new_contents"], json!("alpha\ngamma\n"));
}

#[tokio::test]
async fn a_journal_inside_a_root_is_invisible_and_untouchable_through_every_surface() {
    let j = Jail::with(|c| c.turns.data_dir = c.fs.host_roots[0].join("data/turns"));
    j.write("src/a.txt", "needle before\n");
    ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "src/a.txt", "ops": [{"op": "replace", "pattern": "before", "replacement": "after"}]}]}),
    )
    .await;
    let turns = j.path("data/turns");
    assert!(turns.join("journal.log").exists(), "the journal is there");
    let blob = std::fs::read_dir(turns.join("blobs"))
        .unwrap()
        .next()
        .expect("a stored body")
        .unwrap()
        .path();
    let root = j.root.display().to_string();
    // search and grep over the whole root find the file, never a body copy
    let found = ok(
        &j,
        "coder::search",
        json!({"query": "needle", "path": root, "search_paths": false}),
    )
    .await;
    let hits = found["content_matches"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert!(hits[0]["path"].as_str().unwrap().ends_with("src/a.txt"));
    let grep = ok(
        &j,
        "shell::fs::grep",
        json!({"path": root, "pattern": "needle"}),
    )
    .await;
    assert_eq!(grep["matches"].as_array().unwrap().len(), 1, "{grep}");
    // reads, listings and trees do not see it: exactly like a missing path
    let missing = j
        .call(
            "coder::read-file",
            json!({"path": j.path("data/turns/nope").display().to_string()}),
        )
        .await
        .unwrap_err();
    for path in [blob.clone(), turns.join("journal.log")] {
        let err = j
            .call(
                "coder::read-file",
                json!({"path": path.display().to_string()}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.0, missing.0, "{path:?}: {err:?}");
        let err = j
            .call(
                "shell::fs::stat",
                json!({"path": path.display().to_string()}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.0, "S211", "{path:?}: {err:?}");
    }
    let listed = ok(
        &j,
        "coder::list-folder",
        json!({"path": j.path("data").display().to_string()}),
    )
    .await;
    assert!(!listed.to_string().contains("turns"), "{listed}");
    let tree = ok(&j, "coder::tree", json!({"path": root})).await;
    assert!(!tree.to_string().contains("journal.log"), "{tree}");
    // nothing can rewrite or delete it
    ok(
        &j,
        "shell::fs::sed",
        json!({"path": root, "pattern": "needle", "replacement": "pin"}),
    )
    .await;
    let body = std::fs::read(&blob).unwrap();
    assert!(
        String::from_utf8_lossy(&body).contains("needle"),
        "a body was rewritten"
    );
    let err = j
        .call(
            "shell::fs::rm",
            json!({"path": turns.display().to_string(), "recursive": true}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.0, "S211", "{err:?}");
    assert!(
        j.call(
            "shell::fs::rm",
            json!({"path": j.path("data").display().to_string(), "recursive": true})
        )
        .await
        .is_err(),
        "removing the directory that holds the journal is refused"
    );
    assert!(turns.join("journal.log").exists());
}

#[tokio::test]
async fn change_diff_answers_a_bounded_unified_diff_for_agents() {
    let j = Jail::new();
    let body: String = (1..=200).map(|i| format!("line {i} é\n")).collect();
    j.write("u.txt", &body);
    let u = ok(
        &j,
        "coder::update-file",
        json!({"files": [{"path": "u.txt", "ops": [{"op": "replace", "pattern": "line 100 é", "replacement": "line hundred"}]}]}),
    )
    .await;
    let id = first_change(&u);
    let d = ok(
        &j,
        "coder::change-diff",
        json!({"change_id": id, "format": "unified"}),
    )
    .await;
    let text = d["diff"].as_str().unwrap();
    // named relative to its root, so `git apply` in the root takes it
    assert!(text.starts_with("--- a/u.txt\n+++ b/u.txt\n"), "{text}");
    assert!(text.contains("-line 100 é\n+line hundred\n"), "{text}");
    assert!(
        text.contains(" line 97 é\n") && !text.contains(" line 96 é\n"),
        "3 lines of context: {text}"
    );
    assert_eq!(d["diff_truncated"], false);
    assert!(
        d["old_contents"].is_null() && d["new_contents"].is_null(),
        "{d}"
    );
    let one = ok(
        &j,
        "coder::change-diff",
        json!({"change_id": id, "format": "unified", "context_lines": 0}),
    )
    .await;
    assert!(
        !one["diff"].as_str().unwrap().contains(" line 99 é"),
        "{one}"
    );
    // bounded, cut at a line (never inside a character)
    let cut = ok(
        &j,
        "coder::change-diff",
        json!({"change_id": id, "format": "unified", "max_diff_bytes": 40}),
    )
    .await;
    assert_eq!(cut["diff_truncated"], true);
    let text = cut["diff"].as_str().unwrap();
    assert!(
        text.len() <= 40 && (text.is_empty() || text.ends_with('\n')),
        "{text:?}"
    );
    // the full format is unchanged
    let full = diff(&j, &id).await;
    assert!(
        full["old_contents"]
            .as_str()
            .unwrap()
            .contains("line 100 é")
    );
    assert!(full.get("diff").is_none(), "{full}");
    let err = j
        .call(
            "coder::change-diff",
            json!({"change_id": id, "context_lines": 1000}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.0, "C210");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_on_one_journal_never_share_a_sequence_and_see_each_other() {
    // A second worker on the same configuration (as `ide call` beside the
    // served worker): its own journal handle, so its own `flock`
    // description, exactly as another process has.
    let j = Jail::new();
    let config = j.services.live.snapshot().config.clone();
    let other = crate::services::Services::standalone(
        crate::runtime::Runtime::build(config).expect("runtime"),
    );
    let call_other = |id: &'static str, payload: Value| {
        let other = other.clone();
        async move {
            crate::catalog::Catalog::standard()
                .call(&other, id, payload)
                .await
                .unwrap_or_else(|e| panic!("{id}: {e:?}"))
        }
    };
    const EACH: usize = 40;
    let mine = (0..EACH).map(|i| {
        let j = &j;
        async move {
            ok(
                j,
                "shell::fs::write",
                json!({"path": format!("a{i}.txt"), "content": "a", "session_id": "s"}),
            )
            .await
        }
    });
    let theirs = (0..EACH).map(|i| {
        call_other(
            "shell::fs::write",
            json!({"path": format!("b{i}.txt"), "content": "b", "session_id": "s"}),
        )
    });
    let (a, b) = tokio::join!(
        futures_util::future::join_all(mine),
        futures_util::future::join_all(theirs)
    );
    let mut ids: Vec<String> = a
        .iter()
        .chain(b.iter())
        .map(|v| v["change_id"].as_str().expect("change_id").to_string())
        .collect();
    let seqs: std::collections::BTreeSet<u64> = ids
        .iter()
        .map(|id| {
            id.rsplit_once('-')
                .unwrap()
                .1
                .split('.')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        seqs.len(),
        2 * EACH,
        "one sequence number per change: {ids:?}"
    );
    assert_eq!(seqs.last(), Some(&(2 * EACH as u64)));
    ids.sort();
    // Each side lists all of them, and each diffs the other's.
    for services in [&j.services, &other] {
        let list = crate::catalog::Catalog::standard()
            .call(
                services,
                "shell::turns::list",
                json!({"session_id": "s", "limit": 200}),
            )
            .await
            .expect("list");
        let mut listed: Vec<String> = list["turns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["changes"].as_array().unwrap().iter())
            .map(|c| c["change_id"].as_str().unwrap().to_string())
            .collect();
        listed.sort();
        assert_eq!(listed, ids);
    }
    let by_other = b[0]["change_id"].as_str().unwrap();
    assert_eq!(diff(&j, by_other).await["new_contents"], "b");
    let by_me = a[0]["change_id"].as_str().unwrap();
    let d = call_other("coder::change-diff", json!({"change_id": by_me})).await;
    assert_eq!(d["new_contents"], "a");
    // On disk: one complete line per change, in sequence order.
    let log = std::fs::read_to_string(j.journal.path().join("journal.log")).unwrap();
    let on_disk: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(on_disk, (1..=2 * EACH as u64).collect::<Vec<_>>());
}
