//! HdrHistogram output files, so a run's latencies can be examined with the standard HdrHistogram
//! tools instead of only through our own summary: one `.hgrm` percentile distribution per
//! operation type (the text `outputPercentileDistribution` prints, which the HdrHistogram online
//! plotter loads) and one `.hlog` interval log per run (one compressed histogram per interval and
//! operation type, tagged with the type's name, for `HistogramLogProcessor` and friends).
//!
//! The histograms hold microseconds; both files show milliseconds where the Java tools would
//! (the `.hgrm` value column, the `.hlog` max column), so a `.hgrm` of ours reads like one made
//! by a Java tool from nanosecond data.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{
    IntervalLogWriter, IntervalLogWriterBuilder, IntervalLogWriterError, Tag,
};
use hdrhistogram::serialization::{V2DeflateSerializeError, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::results::{Interval, OpKind, RunResult};

/// Microseconds per millisecond: the histograms hold µs, the files show ms.
const US_PER_MS: f64 = 1000.0;
/// Percentile steps per halving of the distance to 100%, as the HdrHistogram tools default to.
const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// Decimal places of the millisecond values (µs resolution).
const VALUE_DECIMALS: usize = 3;
/// The interval log format version the Java `HistogramLogWriter` declares for this layout.
const HLOG_FORMAT_COMMENT: &str = "[Histogram log format version 1.3]";

/// Writes `h` (µs) as the classic percentile distribution text, values in milliseconds.
pub fn write_hgrm(h: &Histogram<u64>, path: &Path) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    write_percentile_lines(h, &mut out)?;
    write_hgrm_footer(h, &mut out)?;
    out.flush()
}

/// One line per percentile step; the last (100%) line has no `1/(1-Percentile)` column.
fn write_percentile_lines(h: &Histogram<u64>, out: &mut impl Write) -> io::Result<()> {
    let mut total_count = 0u64;
    for v in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        total_count += v.count_since_last_iteration();
        let value_ms = v.value_iterated_to() as f64 / US_PER_MS;
        let q = v.quantile_iterated_to();
        write!(out, "{value_ms:12.VALUE_DECIMALS$} {q:2.12} {total_count:10}")?;
        if q < 1.0 {
            writeln!(out, " {:14.2}", 1.0 / (1.0 - q))?;
        } else {
            writeln!(out)?;
        }
    }
    Ok(())
}

fn write_hgrm_footer(h: &Histogram<u64>, out: &mut impl Write) -> io::Result<()> {
    let (mean_ms, stdev_ms) = (h.mean() / US_PER_MS, h.stdev() / US_PER_MS);
    let max_ms = h.max() as f64 / US_PER_MS;
    writeln!(
        out,
        "#[Mean    = {mean_ms:12.VALUE_DECIMALS$}, StdDeviation   = {stdev_ms:12.VALUE_DECIMALS$}]"
    )?;
    writeln!(out, "#[Max     = {max_ms:12.VALUE_DECIMALS$}, Total count    = {:12}]", h.len())?;
    writeln!(out, "#[Buckets = {:12}, SubBuckets     = {:12}]", h.buckets(), sub_bucket_count(h))
}

/// The Java implementation's `subBucketCount`, which the Rust crate does not expose: the power
/// of two that holds 2 × 10^digits values at unit resolution.
fn sub_bucket_count(h: &Histogram<u64>) -> u64 {
    (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two()
}

/// Writes an interval log of `run`: one entry per interval per operation type with samples,
/// tagged with [`OpKind::name`]. StartTime and BaseTime are both `start_unix_s` (the start of
/// the measured phase), so each entry's timestamp is [`Interval::start_s`].
pub fn write_hlog(run: &RunResult, path: &Path, start_unix_s: f64) -> io::Result<()> {
    let start = unix_time(start_unix_s)?;
    let mut out = BufWriter::new(File::create(path)?);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(HLOG_FORMAT_COMMENT)
        .add_comment(&format!("ringstore-load run {:?}: latency in microseconds", run.label))
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(US_PER_MS)
        .begin_log_with(&mut out, &mut serializer)?;
    for interval in &run.intervals {
        write_interval(&mut log, interval)?;
    }
    drop(log);
    out.flush()
}

type HlogWriter<'a, 'b> = IntervalLogWriter<'a, 'b, BufWriter<File>, V2DeflateSerializer>;

fn write_interval(log: &mut HlogWriter<'_, '_>, interval: &Interval) -> io::Result<()> {
    let start = seconds(interval.start_s)?;
    let length = seconds(interval.length_s)?;
    for kind in OpKind::ALL {
        let Some(h) = interval.latency_us.get(kind.index()).filter(|h| !h.is_empty()) else {
            continue;
        };
        let tag = Tag::new(kind.name()).expect("operation names hold no commas or spaces");
        log.write_histogram(h, start, length, Some(tag)).map_err(hlog_error)?;
    }
    Ok(())
}

fn hlog_error(e: IntervalLogWriterError<V2DeflateSerializeError>) -> io::Error {
    match e {
        IntervalLogWriterError::IoError(e) => e,
        IntervalLogWriterError::SerializeError(e) => {
            io::Error::other(format!("serializing an interval histogram: {e:?}"))
        }
    }
}

fn unix_time(unix_s: f64) -> io::Result<SystemTime> {
    Ok(UNIX_EPOCH + seconds(unix_s)?)
}

/// A non-negative, finite number of seconds as a Duration; anything else is bad input.
fn seconds(s: f64) -> io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{s} is not a time in seconds: {e}"))
    })
}

/// Writes `{stem}-{op}.hgrm` per operation type (and `{stem}-{op}-uncorrected.hgrm` for open-loop
/// runs) and `{stem}.hlog` into `dir`; returns the paths written.
pub fn write_run(
    run: &RunResult,
    dir: &Path,
    stem: &str,
    start_unix_s: f64,
) -> io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for op in &run.ops {
        let name = format!("{stem}-{}", op.kind.name());
        paths.push(write_named_hgrm(&op.latency_us, dir, &name)?);
        if let Some(uncorrected) = &op.uncorrected_us {
            paths.push(write_named_hgrm(uncorrected, dir, &format!("{name}-uncorrected"))?);
        }
    }
    let hlog = dir.join(format!("{stem}.hlog"));
    write_hlog(run, &hlog, start_unix_s).map_err(|e| with_path(e, &hlog))?;
    paths.push(hlog);
    Ok(paths)
}

fn write_named_hgrm(h: &Histogram<u64>, dir: &Path, name: &str) -> io::Result<PathBuf> {
    let path = dir.join(format!("{name}.hgrm"));
    write_hgrm(h, &path).map_err(|e| with_path(e, &path))?;
    Ok(path)
}

/// The same error kind with the file it concerns in the message.
fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    //! Writes histograms and runs into a temporary directory and reads the files back with the
    //! same parsers the HdrHistogram tools use: the `.hgrm` lines must match the histogram's own
    //! percentile iteration, and the `.hlog` entries must decode to the interval histograms.

    use super::*;
    use crate::results::{latency_histogram, OpResult};
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    const START_UNIX_S: f64 = 1_700_000_000.25;

    fn histogram(values_us: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = latency_histogram();
        for v in values_us {
            h.record(v).expect("test values are within bounds");
        }
        h
    }

    fn interval(start_s: f64, read_us: &[u64], update_us: &[u64]) -> Interval {
        let mut latency_us: Vec<_> = OpKind::ALL.iter().map(|_| latency_histogram()).collect();
        latency_us[OpKind::Read.index()] = histogram(read_us.iter().copied());
        latency_us[OpKind::Update.index()] = histogram(update_us.iter().copied());
        let ops = (read_us.len() + update_us.len()) as u64;
        Interval { start_s, length_s: 1.0, ops, errors: 0, latency_us, shard_ops: vec![ops] }
    }

    fn op(kind: OpKind, intervals: &[Interval], uncorrected: bool) -> OpResult {
        let mut latency_us = latency_histogram();
        for i in intervals {
            latency_us.add(&i.latency_us[kind.index()]).expect("same bounds");
        }
        let uncorrected_us = uncorrected.then(|| latency_us.clone());
        OpResult {
            kind,
            ok: latency_us.len(),
            not_found: 0,
            errors: 0,
            errors_by_status: Default::default(),
            latency_us,
            uncorrected_us,
        }
    }

    /// Three intervals; updates only in the first and third, so the second has one entry.
    fn run() -> RunResult {
        let intervals = vec![
            interval(0.0, &[100, 200, 300], &[1_000, 2_000]),
            interval(1.0, &[150, 250], &[]),
            interval(2.0, &[120], &[5_000, 6_000, 7_000]),
        ];
        let ops = vec![op(OpKind::Read, &intervals, true), op(OpKind::Update, &intervals, false)];
        RunResult {
            label: "hdr-test".into(),
            seconds: 3.0,
            ops,
            intervals,
            shard_ops: vec![11],
            partition_ops: vec![11],
            server_cpu_seconds: None,
            client_cpu_seconds: None,
            shard_cpu_seconds: None,
            node: None,
            error_messages: Default::default(),
        }
    }

    struct HgrmLine {
        value_ms: f64,
        percentile: f64,
        total_count: u64,
    }

    fn parse_hgrm(text: &str) -> (Vec<HgrmLine>, u64) {
        let lines = text.lines().filter(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#') && !l.starts_with("Value")
        });
        let parsed = lines.map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<f64>().expect("numeric column");
            HgrmLine { value_ms: n(0), percentile: n(1), total_count: n(2) as u64 }
        });
        let total = text
            .lines()
            .find_map(|l| l.split("Total count    =").nth(1))
            .map(|rest| rest.trim_end_matches(']').trim().parse().expect("count"))
            .expect("a Total count footer");
        (parsed.collect(), total)
    }

    #[test]
    fn hgrm_lines_match_the_histogram() {
        let dir = tempfile::tempdir().expect("tempdir");
        let h = histogram((1..=10_000).map(|i| i * 7));
        let path = dir.path().join("h.hgrm");
        write_hgrm(&h, &path).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        let (lines, total) = parse_hgrm(&text);
        let expected: Vec<_> = h.iter_quantiles(TICKS_PER_HALF_DISTANCE).collect();
        assert_eq!(lines.len(), expected.len());
        assert!(lines.len() > 50, "5 ticks per half distance gives many lines");
        let mut running = 0;
        for (line, v) in lines.iter().zip(&expected) {
            running += v.count_since_last_iteration();
            assert!((line.value_ms - v.value_iterated_to() as f64 / US_PER_MS).abs() < 5e-4);
            assert!((line.percentile - v.quantile_iterated_to()).abs() < 1e-12);
            assert_eq!(line.total_count, running);
        }
        assert_eq!(lines.last().map(|l| l.percentile), Some(1.0));
        assert_eq!(total, h.len());
        assert!(text.contains("#[Buckets = "), "{text}");
        assert!(text.contains("SubBuckets     =         2048]"), "{text}");
    }

    #[test]
    fn hgrm_of_an_empty_histogram_has_the_footer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("empty.hgrm");
        write_hgrm(&latency_histogram(), &path).expect("write");
        let (lines, total) = parse_hgrm(&std::fs::read_to_string(&path).expect("read"));
        assert!(lines.is_empty());
        assert_eq!(total, 0);
    }

    /// (tag, start second, count) of every interval entry, and the StartTime and BaseTime.
    fn read_hlog(bytes: &[u8]) -> (Vec<(String, u64, u64)>, Vec<Duration>) {
        let (mut entries, mut times) = (Vec::new(), Vec::new());
        for entry in IntervalLogIterator::new(bytes) {
            match entry.expect("a well-formed log") {
                LogEntry::StartTime(t) | LogEntry::BaseTime(t) => times.push(t),
                LogEntry::Interval(i) => {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(i.encoded_histogram())
                        .expect("base64");
                    let h: Histogram<u64> =
                        Deserializer::new().deserialize(&mut &raw[..]).expect("a histogram");
                    let tag = i.tag().expect("every entry is tagged").as_str().to_owned();
                    entries.push((tag, i.start_timestamp().as_secs(), h.len()));
                }
            }
        }
        (entries, times)
    }

    #[test]
    fn hlog_holds_one_tagged_entry_per_interval_and_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.hlog");
        write_hlog(&run(), &path, START_UNIX_S).expect("write");
        let (entries, times) = read_hlog(&std::fs::read(&path).expect("read"));
        let expected =
            [("read", 0, 3), ("update", 0, 2), ("read", 1, 2), ("read", 2, 1), ("update", 2, 3)];
        let expected: Vec<_> = expected.iter().map(|&(t, s, n)| (t.to_owned(), s, n)).collect();
        assert_eq!(entries, expected);
        let start = Duration::from_secs_f64(START_UNIX_S);
        assert_eq!(times, vec![start, start]);
    }

    #[test]
    fn hlog_rejects_a_negative_start_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = write_hlog(&run(), &dir.path().join("x.hlog"), -1.0).expect_err("bad input");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn write_run_names_every_file_it_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = write_run(&run(), dir.path(), "base", START_UNIX_S).expect("write");
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().and_then(|n| n.to_str()).expect("utf-8 name").to_owned())
            .collect();
        let expected =
            ["base-read.hgrm", "base-read-uncorrected.hgrm", "base-update.hgrm", "base.hlog"];
        assert_eq!(names, expected);
        assert!(paths.iter().all(|p| p.is_file()));
    }

    #[test]
    fn write_run_errors_name_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing");
        let err = write_run(&run(), &missing, "base", START_UNIX_S).expect_err("no directory");
        assert!(err.to_string().contains("base-read.hgrm"), "{err}");
    }
}
