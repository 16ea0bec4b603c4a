//! UTC date-time text to milliseconds since the Unix epoch, for TIMESTAMP literals.
//!
//! The accepted form is `YYYY-MM-DD`, optionally followed by a space or `T` and `HH:MM:SS`, an
//! optional fraction of 1 to 3 digits (milliseconds; more digits would be silently cut, so they
//! are refused), and an optional `Z`. Years run 0000..=9999 in the proleptic Gregorian calendar;
//! there are no leap seconds. The day count is Howard Hinnant's `days_from_civil`, which is
//! exact over that whole range; the tests pin it against dates computed independently.

/// Why a text is not a date-time; completes "expected 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC): ...".
pub(crate) type Reason = &'static str;

/// Milliseconds since 1970-01-01 00:00:00 UTC of `text`.
pub(crate) fn parse_utc_ms(text: &str) -> Result<i64, Reason> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((date, time)) => (date, Some(time)),
        None => (text, None),
    };
    let days = days(date)?;
    let ms = match time {
        Some(time) => time_ms(time)?,
        None => 0,
    };
    Ok(days * MS_PER_DAY + ms)
}

const MS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of `YYYY-MM-DD`.
fn days(date: &str) -> Result<i64, Reason> {
    const SHAPE: Reason = "the date is not YYYY-MM-DD";
    let b = date.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(SHAPE);
    }
    let (year, month, day) = (
        digits(&date[0..4]).ok_or(SHAPE)?,
        digits(&date[5..7]).ok_or(SHAPE)?,
        digits(&date[8..10]).ok_or(SHAPE)?,
    );
    if !(1..=12).contains(&month) {
        return Err("the month is not 01..=12");
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err("the day is not a day of that month");
    }
    Ok(days_from_civil(year, month, day))
}

/// Milliseconds into the day of `HH:MM:SS[.f[f[f]]]`.
fn time_ms(time: &str) -> Result<i64, Reason> {
    const SHAPE: Reason = "the time is not HH:MM:SS with an optional .fff";
    let (hms, fraction) = match time.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    let b = hms.as_bytes();
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return Err(SHAPE);
    }
    let (hour, minute, second) = (
        digits(&hms[0..2]).ok_or(SHAPE)?,
        digits(&hms[3..5]).ok_or(SHAPE)?,
        digits(&hms[6..8]).ok_or(SHAPE)?,
    );
    if hour > 23 || minute > 59 || second > 59 {
        return Err("the time is not 00:00:00..=23:59:59");
    }
    let ms = match fraction {
        None => 0,
        Some(f) if f.len() > 3 => return Err("the fraction has more than 3 digits (milliseconds)"),
        Some(f) => digits(f).ok_or(SHAPE)? * 10_i64.pow(3 - f.len() as u32),
    };
    Ok(((hour * 60 + minute) * 60 + second) * 1000 + ms)
}

/// The value of a run of ASCII digits (at most 4 here, so no overflow).
fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant, "chrono-Compatible Low-Level
/// Date Algorithms"): years are shifted to start in March so the leap day comes last.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values from GNU `date -u -d '<text>' +%s%3N`, an independent implementation.
    #[test]
    fn known_instants() {
        let cases = [
            ("1970-01-01 00:00:00", 0),
            ("1970-01-01", 0),
            ("2000-03-01 00:00:00", 951_868_800_000),
            ("2024-02-29 12:34:56.789", 1_709_210_096_789),
            ("2024-02-29T12:34:56.789Z", 1_709_210_096_789),
            ("2024-02-29 12:34:56.7", 1_709_210_096_700),
            ("1969-12-31 23:59:59.999", -1),
            ("1900-03-01", -2_203_891_200_000),
            ("0001-01-01 00:00:00", -62_135_596_800_000),
            ("9999-12-31 23:59:59.999", 253_402_300_799_999),
        ];
        for (text, ms) in cases {
            assert_eq!(parse_utc_ms(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn day_counts_agree_with_counting_days() {
        // Walk day by day from 1970 backwards and forwards over a few leap cycles.
        let mut expected = 0;
        for year in 1970..2410 {
            for month in 1..=12 {
                for day in 1..=days_in_month(year, month) {
                    assert_eq!(days_from_civil(year, month, day), expected);
                    expected += 1;
                }
            }
        }
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(1600, 3, 1) - days_from_civil(1600, 2, 28), 2);
    }

    #[test]
    fn bad_texts_say_why() {
        assert_eq!(parse_utc_ms("2023-02-29"), Err("the day is not a day of that month"));
        assert_eq!(parse_utc_ms("1900-02-29"), Err("the day is not a day of that month"));
        assert_eq!(parse_utc_ms("2023-13-01"), Err("the month is not 01..=12"));
        assert_eq!(parse_utc_ms("2023-1-01"), Err("the date is not YYYY-MM-DD"));
        assert_eq!(parse_utc_ms("2023-01-01 24:00:00"), Err("the time is not 00:00:00..=23:59:59"));
        assert_eq!(
            parse_utc_ms("2023-01-01 00:00:00.1234"),
            Err("the fraction has more than 3 digits (milliseconds)")
        );
        assert!(parse_utc_ms("2023-01-01 00:00").is_err());
        assert!(parse_utc_ms("2023-01-01 00:00:00.").is_err());
        assert!(parse_utc_ms("+023-01-01").is_err());
        assert!(parse_utc_ms("").is_err());
        assert!(parse_utc_ms("２０２３-01-01").is_err());
    }
}
