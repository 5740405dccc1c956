//! The JSON report's schema is generated from the types (`schemars`) and checked in as
//! `docs/report.schema.json`. This test fails when the two drift; regenerate with
//! `cargo xtask schema` (which runs this test with `UPDATE_SCHEMA=1`).

use std::path::PathBuf;

fn checked_in() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/report.schema.json")
}

fn generated() -> String {
    let schema = schemars::schema_for!(diagnosis::Report);
    format!(
        "{}\n",
        serde_json::to_string_pretty(&schema).expect("schema serialises")
    )
}

#[test]
fn the_checked_in_schema_matches_the_types() {
    let now = generated();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(checked_in(), &now).expect("write docs/report.schema.json");
        return;
    }
    let file = std::fs::read_to_string(checked_in()).unwrap_or_default();
    assert!(
        file == now,
        "docs/report.schema.json is not what the types generate: run `cargo xtask schema` and commit the result"
    );
}

#[test]
fn the_schema_names_the_version_and_one_spelling_per_enum() {
    let v: serde_json::Value = serde_json::from_str(&generated()).expect("json");
    assert_eq!(v["title"], "Report");
    let text = v.to_string();
    // Every variant of the bottleneck enum in snake_case, once.
    for kind in ["kv_cache_bound", "running_cap_bound", "no_scheduler_lines"] {
        assert!(text.contains(&format!("\"{kind}\"")), "{kind}");
    }
    assert!(!text.contains("\"KvCacheBound\"") && !text.contains("\"OomLikely\""));
    assert!(text.contains("\"oom_likely\""));
    // And a real report validates its key shapes against it: the headline is an object.
    assert_eq!(v["properties"]["headline"]["$ref"], "#/$defs/Headline");
    assert_eq!(diagnosis::SCHEMA_VERSION, 2);
}
