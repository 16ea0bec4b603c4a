//! What a conditional write sends and what its outcome prints: the WHERE-free part of UPSERT's
//! and DELETE's `IF ABSENT` / `IF PRESENT` / `IF VERSION token`, and the outcome line. A
//! single-row write prints the row's new version token (and its version), so a script can pass
//! it to the next statement's `IF VERSION`; in JSON they are numbers beside the message.

use ringstore_model::table::{Condition, RowToken, WriteOutcome};
use ringstore_net::WriteOptions;
use serde_json::json;

use super::ast::{Using, WriteCondition};
use super::output::{json_line, message_table};
use super::Format;

/// The protocol's write options for `condition` and `using` (the rest as the table sets it).
pub fn options(condition: WriteCondition, using: Using) -> WriteOptions {
    let condition = match condition {
        WriteCondition::Always => Condition::Always,
        WriteCondition::IfAbsent => Condition::IfAbsent,
        WriteCondition::IfPresent => Condition::IfPresent,
        WriteCondition::IfVersion(token) => Condition::IfVersion(RowToken(token)),
    };
    WriteOptions {
        condition,
        version: using.version,
        ttl_seconds: using.ttl_seconds,
        ..WriteOptions::default()
    }
}

/// What the outcomes of an UPSERT's rows (`verb` "written") or a one-row DELETE ("deleted")
/// print: the count, the rows a condition kept from being written, and for one row its token.
pub fn outcome_text(format: Format, verb: &str, outcomes: &[WriteOutcome]) -> String {
    let failed = outcomes.iter().filter(|o| matches!(o, WriteOutcome::ConditionFailed { .. }));
    let failed = failed.count();
    let gone = outcomes.iter().filter(|o| matches!(o, WriteOutcome::Deleted { existed: false }));
    let mut text = count(outcomes.len() - failed - gone.count(), verb);
    if failed > 0 {
        text.push_str(&format!("; the condition failed for {}", count(failed, "")));
        text.truncate(text.trim_end().len());
    }
    let token = match outcomes {
        [WriteOutcome::Written { token, version }] => Some((token.0, *version, "")),
        [WriteOutcome::ConditionFailed { current: Some(c) }] => {
            Some((c.token.0, c.version, "the row's current "))
        }
        _ => None,
    };
    match (format, token) {
        (Format::Table, Some((token, version, whose))) => {
            message_table(&format!("{text} ({whose}token {token}, version {version})"))
        }
        (Format::Json, Some((token, version, _))) => {
            json_line(&json!({ "message": text, "token": token, "version": version }))
        }
        (format, None) => format.message(&text),
    }
}

/// `1 row written`, `3 rows deleted`.
pub fn count(n: usize, verb: &str) -> String {
    match n {
        1 => format!("1 row {verb}"),
        n => format!("{n} rows {verb}"),
    }
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::CurrentRow;

    use super::*;

    fn written(token: u64) -> WriteOutcome {
        WriteOutcome::Written { token: RowToken(token), version: 7 }
    }

    #[test]
    fn one_row_prints_its_token_in_both_formats() {
        let text = outcome_text(Format::Table, "written", &[written(42)]);
        assert_eq!(text, "1 row written (token 42, version 7)\n");
        let json = outcome_text(Format::Json, "written", &[written(42)]);
        assert_eq!(json, "{\"message\":\"1 row written\",\"token\":42,\"version\":7}\n");
    }

    #[test]
    fn failed_conditions_are_counted_and_name_the_current_token() {
        let current = CurrentRow { token: RowToken(9), version: 3, row: None };
        let failed = WriteOutcome::ConditionFailed { current: Some(current) };
        let text = outcome_text(Format::Table, "written", std::slice::from_ref(&failed));
        assert_eq!(
            text,
            "0 rows written; the condition failed for 1 row (the row's current token 9, version 3)\n"
        );
        let none = WriteOutcome::ConditionFailed { current: None };
        let text = outcome_text(Format::Table, "written", &[written(1), none, written(2)]);
        assert_eq!(text, "2 rows written; the condition failed for 1 row\n");
        let gone = WriteOutcome::Deleted { existed: false };
        assert_eq!(outcome_text(Format::Table, "deleted", &[gone]), "0 rows deleted\n");
    }

    #[test]
    fn conditions_map_to_the_protocol() {
        let none = Using::default();
        assert_eq!(options(WriteCondition::Always, none), WriteOptions::default());
        let v = options(WriteCondition::IfVersion(5), none);
        assert_eq!(v.condition, Condition::IfVersion(RowToken(5)));
        assert_eq!(options(WriteCondition::IfAbsent, none).condition, Condition::IfAbsent);
        let using = Using { version: Some(1_764_043_200_000), ttl_seconds: Some(60) };
        let o = options(WriteCondition::Always, using);
        assert_eq!((o.version, o.ttl_seconds), (Some(1_764_043_200_000), Some(60)));
    }
}
