//! Inputs found by the coverage-guided fuzzer (`fuzz/`, see fuzz/README.md), kept as
//! regression tests. Each names the artifact it came from.

use sglang_log::{Event, LogReader, parse_line};

/// `crash-0e9916aa…`: the batch marker sat inside a Ray actor tag, which is stripped as a
/// wrapper before the marker search, so the line came out as `Other` (a lost scheduler line).
#[test]
fn marker_inside_a_stripped_ray_tag_is_not_lost() {
    let line =
        b"(SGLangEngine pid=new fill batch1234, ip=10.0.0.5) [w_token: e_cache_hit_rate: 0.00%.";
    let rec = parse_line(line, 1);
    assert_eq!(
        rec.event,
        Event::Malformed {
            reason: "batch marker not followed by a separator"
        }
    );
    // the same through the reader: one line, one malformed record, nothing dropped
    let mut r = LogReader::from_reader("t", &line[..]);
    let stats = r.for_each(|_| {}).unwrap();
    assert_eq!((stats.lines, stats.malformed_lines), (1, 1));
}
