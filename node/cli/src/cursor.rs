//! A cursor over one SQL statement's tokens: matching keywords, punctuation, names and
//! literals, and building errors that point at the token where the statement went wrong.

use super::error::{quoted_excerpt, Place, Problem, StatementError};
use super::lex::{string_contents, Kind, Punct, Token};
use super::literal::Literal;

/// Words that are never a name or an ENUM symbol unless written as `"name"`: they could end a
/// list or start the next clause, so a name spelled like them would make statements ambiguous.
const RESERVED: [&str; 14] = [
    "SELECT", "FROM", "WHERE", "AND", "ORDER", "BY", "LIMIT", "ALLOW", "VALUES", "INTO", "BETWEEN",
    "TRUE", "FALSE", "NULL",
];

/// What a literal may be, for messages.
pub(crate) const VALUE_EXPECTED: &str =
    "a value: a number, a 'string', x'hex', TRUE, FALSE, NULL or an ENUM symbol";

pub(crate) type Result<T> = std::result::Result<T, StatementError>;

#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    text: &'a str,
    tokens: &'a [Token],
    next: usize,
    statement: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `tokens` (non-empty, without the closing `;`) of statement `statement` of
    /// `text`.
    pub fn new(text: &'a str, tokens: &'a [Token], statement: usize) -> Cursor<'a> {
        Cursor { text, tokens, next: 0, statement }
    }

    pub fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).copied()
    }

    pub fn text_of(&self, token: Token) -> &'a str {
        &self.text[token.start..token.end]
    }

    /// The statement's source text, from its first token to its last.
    pub fn source(&self) -> &'a str {
        match (self.tokens.first(), self.tokens.last()) {
            (Some(first), Some(last)) => &self.text[first.start..last.end],
            _ => "",
        }
    }

    /// Where the next token starts, or where the statement's last token ends.
    pub fn offset(&self) -> usize {
        match self.peek() {
            Some(t) => t.start,
            None => self.tokens.last().map_or(0, |t| t.end),
        }
    }

    /// Steps over the next token (one the caller has looked at with [`Cursor::peek`]).
    pub fn advance(&mut self) {
        self.next = (self.next + 1).min(self.tokens.len());
    }

    pub fn at_keyword(&self, keyword: &str) -> bool {
        self.peek().is_some_and(|t| t.kind == Kind::Word && self.is_word(t, keyword))
    }

    pub fn eat_keyword(&mut self, keyword: &str) -> bool {
        let at = self.at_keyword(keyword);
        self.next += usize::from(at);
        at
    }

    pub fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.eat_keyword(keyword) {
            return Ok(());
        }
        Err(self.syntax(keyword))
    }

    pub fn at_punct(&self, punct: Punct) -> bool {
        self.peek().is_some_and(|t| t.kind == Kind::Punct(punct))
    }

    pub fn eat_punct(&mut self, punct: Punct) -> bool {
        let at = self.at_punct(punct);
        self.next += usize::from(at);
        at
    }

    pub fn expect_punct(&mut self, punct: Punct, expected: &str) -> Result<()> {
        if self.eat_punct(punct) {
            return Ok(());
        }
        Err(self.syntax(expected))
    }

    /// Whether the next token can start a name: a word that is not reserved, or a `"name"`.
    pub fn at_name(&self) -> bool {
        self.peek().is_some_and(|t| match t.kind {
            Kind::Word => !self.is_reserved(t),
            Kind::QuotedName => true,
            _ => false,
        })
    }

    /// A table or field name and the offset where it starts.
    pub fn name(&mut self, expected: &str) -> Result<(String, usize)> {
        let token = self.peek().filter(|_| self.at_name()).ok_or_else(|| self.syntax(expected))?;
        self.next += 1;
        let text = self.text_of(token);
        let name = match token.kind {
            Kind::QuotedName => &text[1..text.len() - 1],
            _ => text,
        };
        Ok((name.to_owned(), token.start))
    }

    pub fn literal(&mut self) -> Result<Literal> {
        let token = self.peek().ok_or_else(|| self.syntax(VALUE_EXPECTED))?;
        let text = self.text_of(token);
        let literal = match token.kind {
            Kind::Number => Literal::Number(text.to_owned()),
            Kind::String => Literal::String(string_contents(text)),
            Kind::Binary => Literal::Binary(
                hex(&text[2..text.len() - 1]).ok_or_else(|| self.syntax(BINARY_EXPECTED))?,
            ),
            Kind::Word if self.is_word(token, "TRUE") => Literal::Boolean(true),
            Kind::Word if self.is_word(token, "FALSE") => Literal::Boolean(false),
            Kind::Word if self.is_word(token, "NULL") => Literal::Null,
            Kind::Word if !self.is_reserved(token) => Literal::Symbol(text.to_owned()),
            _ => return Err(self.syntax(VALUE_EXPECTED)),
        };
        self.next += 1;
        Ok(literal)
    }

    /// A whole number that fits a `u64`.
    pub fn count(&mut self, expected: &str) -> Result<u64> {
        let token = self.peek().filter(|t| t.kind == Kind::Number);
        let count = token.and_then(|t| self.text_of(t).parse::<u64>().ok());
        let count = count.ok_or_else(|| self.syntax(expected))?;
        self.next += 1;
        Ok(count)
    }

    /// Checks that the statement has no tokens left; `also` says what else could have come
    /// (empty: nothing).
    pub fn finish(&self, also: &str) -> Result<()> {
        match (self.peek(), also) {
            (None, _) => Ok(()),
            (Some(_), "") => Err(self.syntax("the end of the statement")),
            (Some(_), also) => Err(self.syntax(format!("{also} or the end of the statement"))),
        }
    }

    /// A syntax error at the next token.
    pub fn syntax(&self, expected: impl Into<String>) -> StatementError {
        let found = match self.peek() {
            Some(t) => quoted_excerpt(self.text_of(t)),
            None => "the end of the statement".to_owned(),
        };
        StatementError::Syntax { at: self.place(self.offset()), expected: expected.into(), found }
    }

    pub fn invalid(&self, offset: usize, problem: Problem) -> StatementError {
        StatementError::Invalid { at: self.place(offset), problem }
    }

    pub fn place(&self, offset: usize) -> Place {
        Place::at(self.text, self.statement, offset)
    }

    fn is_word(&self, token: Token, word: &str) -> bool {
        self.text_of(token).eq_ignore_ascii_case(word)
    }

    fn is_reserved(&self, token: Token) -> bool {
        token.kind == Kind::Word && RESERVED.iter().any(|r| self.is_word(token, r))
    }
}

const BINARY_EXPECTED: &str = "x'...' with an even number of hex digits";

/// The bytes of an even number of hex digits, or None.
fn hex(digits: &str) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |b: u8| char::from(b).to_digit(16);
    digits
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_needs_pairs_of_hex_digits() {
        assert_eq!(hex("0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(hex(""), Some(vec![]));
        assert_eq!(hex("0"), None);
        assert_eq!(hex("0g"), None);
        assert_eq!(hex("é1"), None);
    }
}
