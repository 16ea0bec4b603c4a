//! The tokens of SQL-style statements, with their byte ranges in the script.
//!
//! The lexer is lenient on purpose: DDL statements go to the server verbatim, so it must get
//! through any text the server's DDL grammar accepts. Its only error is an unterminated quote,
//! because without the closing quote it can not tell where the statement ends. Everything else it
//! does not know becomes [`Kind::Other`] or [`Kind::BadNumber`], which the DML grammar reports as
//! what it found.

/// What a token is. Its text is the script's bytes `start..end`, quotes included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Letters, digits and `_`, not starting with a digit: a keyword, a name or an ENUM symbol.
    Word,
    /// `"name"`: a name that may be a reserved word. Ends at the line end at the latest.
    QuotedName,
    /// `'text'`, where `''` stands for one quote.
    String,
    /// `x'0aff'` or `X'0AFF'`; the digits are checked by the parser.
    Binary,
    /// `-12`, `3.5`, `.5`, `1e3`, `+7`.
    Number,
    /// A number run into letters, like `12ab`.
    BadNumber,
    Punct(Punct),
    /// Any other character.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Punct {
    Open,
    Close,
    Comma,
    Semicolon,
    Star,
    Eq,
    /// `<>` or `!=`: not supported, but lexed whole so the error shows it.
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// A quote that is never closed: where it opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unterminated {
    pub start: usize,
    pub quote: char,
}

/// The offset of the next token at or after `pos`: whitespace and `--` comments are skipped.
pub(crate) fn skip_gap(text: &str, mut pos: usize) -> usize {
    loop {
        let rest = &text[pos..];
        let trimmed = rest.trim_start();
        pos += rest.len() - trimmed.len();
        if !trimmed.starts_with("--") {
            return pos;
        }
        pos += trimmed.find('\n').unwrap_or(trimmed.len());
    }
}

/// The token that starts at `pos` (a result of [`skip_gap`]), or None at the end of the text.
pub(crate) fn token_at(text: &str, pos: usize) -> Result<Option<Token>, Unterminated> {
    let rest = &text[pos..];
    let Some(first) = rest.chars().next() else { return Ok(None) };
    let unterminated = |quote| Unterminated { start: pos, quote };
    let (kind, len) = match first {
        '\'' => (Kind::String, quoted(rest, '\'').ok_or(unterminated('\''))?),
        '"' => (Kind::QuotedName, quoted_name(rest).ok_or(unterminated('"'))?),
        'x' | 'X' if rest[1..].starts_with('\'') => {
            (Kind::Binary, 1 + quoted(&rest[1..], '\'').ok_or(unterminated('\''))?)
        }
        _ if starts_number(rest) => number(rest),
        c if is_word_char(c) => (Kind::Word, word_len(rest)),
        _ => punct(rest),
    };
    Ok(Some(Token { kind, start: pos, end: pos + len }))
}

/// Characters of a word: Unicode letters and digits and `_`, as the storage DDL lexes names.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The contents of a `'...'` string token, with `''` turned back into `'`.
pub(crate) fn string_contents(token_text: &str) -> String {
    let inner = token_text.get(1..token_text.len().saturating_sub(1)).unwrap_or("");
    inner.replace("''", "'")
}

/// Length of a `quote`-delimited token at the start of `rest`, both quotes included; a doubled
/// quote inside stands for one quote.
fn quoted(rest: &str, quote: char) -> Option<usize> {
    let mut pos = quote.len_utf8();
    loop {
        let close = pos + rest[pos..].find(quote)?;
        pos = close + quote.len_utf8();
        if !rest[pos..].starts_with(quote) {
            return Some(pos);
        }
        pos += quote.len_utf8();
    }
}

/// Length of a `"name"` token, or None when the line or the text ends first (as in the
/// storage DDL grammar, a quoted name never spans lines).
fn quoted_name(rest: &str) -> Option<usize> {
    let close = rest[1..].find(['"', '\n'])? + 1;
    rest[close..].starts_with('"').then_some(close + 1)
}

fn word_len(rest: &str) -> usize {
    rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len())
}

/// A digit, or a sign or point followed by one (`--` is a comment and was skipped before).
fn starts_number(rest: &str) -> bool {
    let b = rest.as_bytes();
    let digit_at = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let point_digit_at = |i: usize| b.get(i) == Some(&b'.') && digit_at(i + 1);
    match b.first() {
        Some(b'-' | b'+') => digit_at(1) || point_digit_at(1),
        Some(_) => digit_at(0) || point_digit_at(0),
        None => false,
    }
}

/// `[sign] digits [. digits] [e [sign] digits]`; a number run into word characters or a second
/// point is one [`Kind::BadNumber`] token, so `12ab` is reported whole.
fn number(rest: &str) -> (Kind, usize) {
    let b = rest.as_bytes();
    let digits_from = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut end = digits_from(usize::from(matches!(b[0], b'-' | b'+')));
    if b.get(end) == Some(&b'.') {
        end = digits_from(end + 1);
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut exp = end + 1;
        exp += usize::from(matches!(b.get(exp), Some(b'-' | b'+')));
        if b.get(exp).is_some_and(u8::is_ascii_digit) {
            end = digits_from(exp);
        }
    }
    let tail = rest[end..].find(|c: char| !is_word_char(c) && c != '.').unwrap_or(rest.len() - end);
    if tail == 0 {
        (Kind::Number, end)
    } else {
        (Kind::BadNumber, end + tail)
    }
}

fn punct(rest: &str) -> (Kind, usize) {
    const TWO: [(&str, Punct); 4] =
        [("<=", Punct::Le), (">=", Punct::Ge), ("<>", Punct::Ne), ("!=", Punct::Ne)];
    if let Some((text, p)) = TWO.iter().find(|(text, _)| rest.starts_with(text)) {
        return (Kind::Punct(*p), text.len());
    }
    let one = match rest.as_bytes().first() {
        Some(b'(') => Punct::Open,
        Some(b')') => Punct::Close,
        Some(b',') => Punct::Comma,
        Some(b';') => Punct::Semicolon,
        Some(b'*') => Punct::Star,
        Some(b'=') => Punct::Eq,
        Some(b'<') => Punct::Lt,
        Some(b'>') => Punct::Gt,
        _ => return (Kind::Other, rest.chars().next().map_or(0, char::len_utf8)),
    };
    (Kind::Punct(one), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every token of `text` as (kind, text).
    fn lex(text: &str) -> Vec<(Kind, &str)> {
        let mut out = Vec::new();
        let mut pos = skip_gap(text, 0);
        while let Some(t) = token_at(text, pos).expect("terminated") {
            out.push((t.kind, &text[t.start..t.end]));
            pos = skip_gap(text, t.end);
        }
        out
    }

    #[test]
    fn tokens_of_a_query() {
        let tokens = lex("SELECT * FROM t WHERE a='x''y' AND 123<b<=-4.5e3 -- tail\n;");
        let (w, n, p) = (Kind::Word, Kind::Number, Kind::Punct);
        assert_eq!(
            tokens,
            [
                (w, "SELECT"),
                (p(Punct::Star), "*"),
                (w, "FROM"),
                (w, "t"),
                (w, "WHERE"),
                (w, "a"),
                (p(Punct::Eq), "="),
                (Kind::String, "'x''y'"),
                (w, "AND"),
                (n, "123"),
                (p(Punct::Lt), "<"),
                (w, "b"),
                (p(Punct::Le), "<="),
                (n, "-4.5e3"),
                (p(Punct::Semicolon), ";"),
            ]
        );
    }

    #[test]
    fn numbers_strings_and_binaries() {
        assert_eq!(
            lex("-12 3.5 .5 1e3 +7 1e"),
            [
                (Kind::Number, "-12"),
                (Kind::Number, "3.5"),
                (Kind::Number, ".5"),
                (Kind::Number, "1e3"),
                (Kind::Number, "+7"),
                (Kind::BadNumber, "1e"),
            ]
        );
        assert_eq!(lex("12ab 1.2.3"), [(Kind::BadNumber, "12ab"), (Kind::BadNumber, "1.2.3")]);
        assert_eq!(
            lex("x'0aff' X'' xy"),
            [(Kind::Binary, "x'0aff'"), (Kind::Binary, "X''"), (Kind::Word, "xy"),]
        );
        assert_eq!(lex("'a;b' \"n m\""), [(Kind::String, "'a;b'"), (Kind::QuotedName, "\"n m\"")]);
        assert_eq!(string_contents("'it''s'"), "it's");
        assert_eq!(
            lex("a<>b !"),
            [
                (Kind::Word, "a"),
                (Kind::Punct(Punct::Ne), "<>"),
                (Kind::Word, "b"),
                (Kind::Other, "!"),
            ]
        );
    }

    #[test]
    fn unterminated_quotes_say_where_they_open() {
        assert_eq!(token_at("'abc", 0), Err(Unterminated { start: 0, quote: '\'' }));
        assert_eq!(token_at("'ab''", 0), Err(Unterminated { start: 0, quote: '\'' }));
        assert_eq!(token_at("\"ab\n\"", 0), Err(Unterminated { start: 0, quote: '"' }));
        assert_eq!(token_at("x'0a", 0), Err(Unterminated { start: 0, quote: '\'' }));
    }

    #[test]
    fn comments_and_whitespace_are_gaps() {
        assert_eq!(skip_gap("  -- a\n -- b\n x", 0), 14);
        assert_eq!(skip_gap("-- only", 0), 7);
        assert_eq!(lex("a-b"), [(Kind::Word, "a"), (Kind::Other, "-"), (Kind::Word, "b")]);
    }
}
