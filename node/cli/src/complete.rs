//! Tab completion at the interactive prompt: statement keywords, table names and field names.
//!
//! The word under the cursor is completed from what comes before it in its statement (the lines
//! of the statement typed so far, then the current line up to the word):
//!
//! | where | candidates |
//! |---|---|
//! | the statement's first word | the statements' first words (`SELECT`, `UPSERT`, `BEGIN` ...) |
//! | after `FROM`, `INTO`, `TABLE`, `EXISTS`, a leading `DESCRIBE`/`DESC` | the node's tables (`SHOW TABLES`) |
//! | after `TTL n` | the TTL's units ([`TTL_UNITS`]) |
//! | anywhere else | the fields of the tables the statement names (`DESCRIBE`), then the keywords of that kind of statement ([`SELECT_WORDS`], [`WRITE_WORDS`], [`DDL_WORDS`], [`BATCH_WORDS`]) |
//!
//! Keywords match in any case and are offered in upper case, or in lower case when the word
//! typed so far is lower case; names match case-sensitively. Inside a `'string'` nothing is
//! offered. Names come from a [`NameSource`]; the prompt's asks the connected node.

/// Where completion learns the node's tables and their fields.
pub trait NameSource {
    /// Every table's name (none if they can not be learnt).
    fn tables(&mut self) -> Vec<String>;
    /// The fields of `table` in schema order (none if it has none or they can not be learnt).
    fn fields(&mut self, table: &str) -> Vec<String>;
}

/// Words that start a statement.
pub const STATEMENT_WORDS: &[&str] = &[
    "SELECT", "UPSERT", "UPDATE", "DELETE", "BEGIN", "APPLY", "DESCRIBE", "DESC", "STATS",
    "TOPOLOGY", "SHOW", "CREATE", "DROP", "ALTER", "EXIT", "QUIT",
];

/// Words that go on a SELECT: clauses, conditions, versions and literals.
pub const SELECT_WORDS: &[&str] = &[
    "FROM", "WHERE", "AND", "ORDER", "BY", "ASC", "DESC", "LIMIT", "ALLOW", "FULL", "SCAN",
    "BETWEEN", "TRUE", "FALSE", "NULL", "VERSIONS", "ALL", "TO",
];

/// Words that go on an UPSERT, UPDATE or DELETE: clauses, conditions, USING and literals.
pub const WRITE_WORDS: &[&str] = &[
    "FROM", "WHERE", "AND", "INTO", "VALUES", "BETWEEN", "TRUE", "FALSE", "NULL", "SET", "IF",
    "ABSENT", "PRESENT", "VERSION", "USING", "TTL",
];

/// The units of `USING TTL n`, offered only right after its number.
pub const TTL_UNITS: &[&str] = &["SECONDS", "HOURS", "DAYS"];

/// Words that go on a batch marker: `BEGIN BATCH [ABORT ON FAILURE]`, `APPLY BATCH`.
pub const BATCH_WORDS: &[&str] = &["BATCH", "ABORT", "ON", "FAILURE"];

/// Words that go on a CREATE, DROP or ALTER: DDL words, table options and field types.
pub const DDL_WORDS: &[&str] = &[
    "TABLE",
    "IF",
    "NOT",
    "EXISTS",
    "PRIMARY",
    "KEY",
    "SHARD",
    "USING",
    "TTL",
    "NONE",
    "WITH",
    "VERSIONS",
    "VERSION",
    "OFFSET",
    "SECONDS",
    "DAYS",
    "HOURS",
    "STRING",
    "LONG",
    "INTEGER",
    "DOUBLE",
    "FLOAT",
    "BOOLEAN",
    "BINARY",
    "TIMESTAMP",
    "ENUM",
];

/// The words that go on a statement starting with `first`.
fn clause_words(first: &str) -> Vec<&'static str> {
    if is_keyword(first, &["SELECT"]) {
        SELECT_WORDS.to_vec()
    } else if is_keyword(first, &["UPSERT", "UPDATE", "DELETE"]) {
        WRITE_WORDS.to_vec()
    } else if is_keyword(first, &["CREATE", "DROP", "ALTER"]) {
        DDL_WORDS.to_vec()
    } else if is_keyword(first, &["SHOW"]) {
        vec!["TABLES", "STATS", "TOPOLOGY"]
    } else if is_keyword(first, &["DESCRIBE", "DESC"]) {
        vec!["TABLE"]
    } else if is_keyword(first, &["BEGIN", "APPLY"]) {
        BATCH_WORDS.to_vec()
    } else {
        [SELECT_WORDS, WRITE_WORDS, DDL_WORDS].concat()
    }
}

/// Words after which a table name comes.
const TABLE_BEFORE: &[&str] = &["FROM", "INTO", "UPDATE", "TABLE", "EXISTS"];

/// Completes the word that ends at byte `pos` of `line`, the statement's earlier lines being
/// `earlier` (empty, or whole lines ending in `\n`). Gives the byte offset in `line` where the
/// word starts and the candidates that replace it, sorted, each once.
pub fn complete(
    earlier: &str,
    line: &str,
    pos: usize,
    names: &mut dyn NameSource,
) -> (usize, Vec<String>) {
    let pos = floor_boundary(line, pos);
    let start = line[..pos].rfind(|c: char| !is_word_char(c)).map_or(0, |i| i + 1);
    let typed = &line[start..pos];
    let before = format!("{earlier}{}", &line[..start]);
    let Some(statement) = open_statement(&before) else {
        return (start, Vec::new());
    };
    let before_words = words(statement);
    let Some(previous) = before_words.last() else {
        return (start, keywords(STATEMENT_WORDS, typed));
    };
    if let [.., ttl, n] = before_words.as_slice() {
        if is_keyword(ttl, &["TTL"]) && n.chars().all(|c| c.is_ascii_digit()) {
            return (start, keywords(TTL_UNITS, typed));
        }
    }
    let leading_describe = before_words.len() == 1 && is_keyword(previous, &["DESCRIBE", "DESC"]);
    if leading_describe || is_keyword(previous, TABLE_BEFORE) {
        return (start, matching(names.tables(), typed));
    }
    // The tables the statement names, also after the cursor (`SELECT | FROM t`).
    let whole = format!("{statement}{}", &line[start..]);
    let mut fields = Vec::new();
    for table in named_tables(&words(&whole)) {
        fields.extend(names.fields(&table));
    }
    let mut candidates = matching(fields, typed);
    let keywords: Vec<String> = keywords(&clause_words(&before_words[0]), typed)
        .into_iter()
        .filter(|k| !candidates.contains(k))
        .collect();
    candidates.extend(keywords);
    (start, candidates)
}

/// The largest character boundary of `line` at or before `pos`.
fn floor_boundary(line: &str, pos: usize) -> usize {
    let mut pos = pos.min(line.len());
    while !line.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The part of `text` after its last `;` outside quotes, or None when `text` ends inside a
/// `'string'` or a `"name"` (nothing to complete there).
fn open_statement(text: &str) -> Option<&str> {
    let mut quote = None;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ';') => start = i + 1,
            _ => {}
        }
    }
    quote.is_none().then_some(&text[start..])
}

/// The words of a statement: bare words and `"quoted"` names (unquoted), with `'strings'`,
/// numbers' punctuation and operators left out. `--` comments are skipped.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let quoted: String = chars.by_ref().take_while(|&d| d != c).collect();
                if c == '"' {
                    out.push(quoted);
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                chars.by_ref().take_while(|&d| d != '\n').for_each(drop);
            }
            c if is_word_char(c) => {
                let mut word = String::from(c);
                while let Some(&d) = chars.peek().filter(|d| is_word_char(**d)) {
                    word.push(d);
                    chars.next();
                }
                out.push(word);
            }
            _ => {}
        }
    }
    out
}

/// The words that follow a table-naming keyword (or a leading `DESCRIBE`).
fn named_tables(words: &[String]) -> Vec<String> {
    let mut tables: Vec<String> = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        let describe = i == 0 && is_keyword(&pair[0], &["DESCRIBE", "DESC"]);
        let table = &pair[1];
        if (describe || is_keyword(&pair[0], TABLE_BEFORE)) && !tables.contains(table) {
            tables.push(table.clone());
        }
    }
    tables
}

fn is_keyword(word: &str, list: &[&str]) -> bool {
    list.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// The keywords of `list` that `typed` starts (in any case), in the case of `typed`.
fn keywords(list: &[&str], typed: &str) -> Vec<String> {
    let lower = !typed.is_empty() && !typed.chars().any(|c| c.is_ascii_uppercase());
    let mut out: Vec<String> = list
        .iter()
        .filter(|k| k.len() >= typed.len() && k[..typed.len()].eq_ignore_ascii_case(typed))
        .map(|k| if lower { k.to_ascii_lowercase() } else { (*k).to_owned() })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The names that `typed` starts (case-sensitively), sorted, each once.
fn matching(mut names: Vec<String>, typed: &str) -> Vec<String> {
    names.retain(|n| n.starts_with(typed));
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Tables `orders (userid, orderid, amount)` and `events (host, ts)`; counts the lookups.
    #[derive(Default)]
    struct Fixed {
        lookups: usize,
    }

    impl NameSource for Fixed {
        fn tables(&mut self) -> Vec<String> {
            self.lookups += 1;
            vec!["orders".into(), "events".into(), "order_lines".into()]
        }

        fn fields(&mut self, table: &str) -> Vec<String> {
            self.lookups += 1;
            let all = BTreeMap::from([
                ("orders", vec!["userid", "orderid", "amount"]),
                ("events", vec!["host", "ts"]),
            ]);
            all.get(table).map(|f| f.iter().map(|s| (*s).to_owned()).collect()).unwrap_or_default()
        }
    }

    fn at_end(earlier: &str, line: &str) -> (usize, Vec<String>) {
        complete(earlier, line, line.len(), &mut Fixed::default())
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn first_words_are_statements() {
        assert_eq!(at_end("", "SEL"), (0, strings(&["SELECT"])));
        assert_eq!(at_end("", "  sel"), (2, strings(&["select"])));
        assert_eq!(at_end("", "STATS; D"), (7, strings(&["DELETE", "DESC", "DESCRIBE", "DROP"])));
        assert_eq!(at_end("", "").1.len(), STATEMENT_WORDS.len());
    }

    #[test]
    fn tables_after_from_into_and_describe() {
        assert_eq!(at_end("", "SELECT * FROM ord"), (14, strings(&["order_lines", "orders"])));
        assert_eq!(at_end("", "upsert into e"), (12, strings(&["events"])));
        assert_eq!(at_end("", "DESCRIBE o").1, strings(&["order_lines", "orders"]));
        assert_eq!(at_end("", "DESC TABLE ev").1, strings(&["events"]));
        assert_eq!(at_end("", "DROP TABLE IF EXISTS ev").1, strings(&["events"]));
        assert_eq!(at_end("", "UPDATE ev").1, strings(&["events"]));
        assert_eq!(at_end("", "UPDATE orders SET us").1, strings(&["userid", "using"]));
        assert_eq!(at_end("SELECT *\n", "FROM ev").1, strings(&["events"]), "an earlier line");
        assert!(at_end("", "SELECT * FROM Ord").1.is_empty(), "names are case-sensitive");
    }

    #[test]
    fn fields_of_the_named_tables_then_keywords() {
        assert_eq!(at_end("", "SELECT * FROM orders WHERE us"), (27, strings(&["userid"])));
        assert_eq!(
            at_end("", "SELECT * FROM orders WHERE userid = 'a' AND ord").1,
            ["orderid", "order"]
        );
        assert_eq!(at_end("SELECT * FROM events\n", "WHERE h").1, ["host"]);
        assert_eq!(at_end("", "UPSERT INTO events (h").1, ["host"]);
        assert_eq!(at_end("", "SELECT * FROM orders WH").1, ["WHERE"]);
        assert_eq!(at_end("", "select * from orders wh").1, ["where"]);
        assert_eq!(at_end("", "SELECT * FROM orders ORDER BY orderid DE").1, ["DESC"]);
        // A field list before FROM: the table after the cursor counts.
        let line = "SELECT am FROM orders";
        let (start, found) = complete("", line, 9, &mut Fixed::default());
        assert_eq!((start, found), (7, strings(&["amount"])));
        // Fields first, then keywords that also match.
        let both = at_end("", "SELECT * FROM events WHERE t").1;
        assert_eq!(both, strings(&["ts", "to", "true"]));
        // Each kind of statement its own words.
        assert_eq!(at_end("", "CREATE TABLE n (a LO").1, ["LONG"]);
        assert_eq!(at_end("", "show t").1, ["tables", "topology"]);
        assert_eq!(at_end("", "DESCRIBE T").1, Vec::<String>::new(), "a table name comes first");
    }

    /// The words of batches, versions and USING (issue 14) complete too.
    #[test]
    fn batch_versions_and_using_words() {
        assert_eq!(at_end("", "BEG").1, ["BEGIN"]);
        assert_eq!(at_end("", "STATS; ap").1, ["apply"]);
        assert_eq!(at_end("", "BEGIN BA").1, ["BATCH"]);
        assert_eq!(at_end("", "begin batch ab").1, ["abort"]);
        assert_eq!(at_end("", "BEGIN BATCH ABORT ON FA").1, ["FAILURE"]);
        assert_eq!(at_end("", "APPLY B").1, ["BATCH"]);
        assert_eq!(at_end("", "UPSERT INTO events (host) VALUES ('h') US").1, ["USING"]);
        assert_eq!(at_end("", "UPSERT INTO events (host) VALUES ('h') USING TT").1, ["TTL"]);
        assert_eq!(
            at_end("", "UPSERT INTO events (host) VALUES ('h') USING TTL 5 HO").1,
            ["HOURS"]
        );
        let update = "UPDATE events SET ts = 1 WHERE host = 'h' USING TTL 12 ";
        assert_eq!(at_end("", update).1, ["DAYS", "HOURS", "SECONDS"]);
        let select = "SELECT * FROM events WHERE host = 'h' US";
        assert!(at_end("", select).1.is_empty(), "USING is no SELECT word");
        let select = "SELECT * FROM orders WHERE userid = 'a' AND orderid = 1 VERS";
        assert_eq!(at_end("", select).1, ["VERSIONS"]);
        assert_eq!(
            at_end("", "SELECT * FROM events WHERE host = 'a' VERSIONS AL").1,
            ["ALL", "ALLOW"]
        );
    }

    #[test]
    fn nothing_inside_strings_and_no_lookup_there() {
        let mut names = Fixed::default();
        let line = "SELECT * FROM orders WHERE userid = 'ab";
        assert_eq!(complete("", line, line.len(), &mut names), (37, Vec::new()));
        assert_eq!(names.lookups, 0);
        let (_, found) = at_end("UPSERT INTO orders (userid) VALUES ('a;\n", "b'); SEL");
        assert_eq!(found, ["SELECT"], "a ';' inside a string ends nothing");
    }

    #[test]
    fn words_skip_strings_comments_and_operators() {
        assert_eq!(
            words("SELECT \"a b\", c FROM t -- FROM x\nWHERE c >= 'FROM y' AND d<3"),
            strings(&["SELECT", "a b", "c", "FROM", "t", "WHERE", "c", "AND", "d", "3"])
        );
        assert_eq!(named_tables(&words("DESC t")), ["t"]);
        assert!(named_tables(&words("SELECT * FROM t ORDER BY a DESC")).contains(&"t".to_owned()));
    }

    #[test]
    fn positions_inside_a_character_are_clamped() {
        let line = "SELECT * FROM é";
        let (start, _) = complete("", line, line.len() - 1, &mut Fixed::default());
        assert!(line.is_char_boundary(start));
    }
}
