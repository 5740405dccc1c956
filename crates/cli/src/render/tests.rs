//! Tests of the number and range formatting.

use super::*;

#[test]
fn small_shares_keep_their_digits() {
    assert_eq!(percent(0.0048), "0.48%");
    assert_eq!(percent(0.00012), "0.012%");
    assert_eq!(percent(0.0), "0%");
    assert_eq!(percent(0.56), "56%");
    assert_eq!(percent(0.996), "99.6%");
    assert_eq!(percent(0.9996), "99.9%");
    assert_eq!(percent(1.0), "100%");
}

#[test]
fn a_range_names_each_file_it_spans() {
    let r = |first_line, last_line, last_source: Option<&str>| SourceRange {
        source: "rank00.log".into(),
        first_line,
        last_line,
        last_source: last_source.map(String::from),
    };
    assert_eq!(range_text(&r(7, 7, None)), "rank00.log:7");
    assert_eq!(range_text(&r(7, 90, None)), "rank00.log:7-90");
    assert_eq!(
        range_text(&r(9799, 116, Some("rank01.log"))),
        "rank00.log:9799 to rank01.log:116"
    );
}
