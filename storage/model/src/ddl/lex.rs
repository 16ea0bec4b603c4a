//! Pieces both grammars share: committing to a branch with a description of what was expected,
//! raising a [`ScriptProblem`] from inside a parser, and turning winnow's error into a
//! [`DdlError`] with a line and column.
//!
//! Every token parser leaves the input at the start of a token when it fails (winnow's `verify`
//! and `alt` reset it), so the input left behind by a failed parse points at the offending token.
//! That is what makes the reported column land on the token rather than on the whitespace before it.

use winnow::combinator::cut_err;
use winnow::error::{ContextError, ErrMode, FromExternalError, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::token::take_while;

use super::error::{DdlError, Position, ScriptProblem};
use crate::table::FieldType;

pub(crate) type In<'a> = &'a str;

/// Commits to the current branch: if `parser` fails, the whole parse fails here, reporting `what`.
pub(crate) fn must<'a, O>(
    parser: impl Parser<In<'a>, O, ErrMode<ContextError>>,
    what: &'static str,
) -> impl Parser<In<'a>, O, ErrMode<ContextError>> {
    cut_err(parser).context(StrContext::Expected(StrContextValue::Description(what)))
}

/// Stops the parse with `problem`, reported at the current input position.
pub(crate) fn invalid<T>(input: &In<'_>, problem: ScriptProblem) -> ModalResult<T> {
    Err(ErrMode::Cut(ContextError::from_external_error(input, problem)))
}

/// A decimal number that fits a `u64`. More digits than that fail (and are reported as what was
/// expected) instead of wrapping.
pub(crate) fn number(input: &mut In<'_>) -> ModalResult<u64> {
    take_while(1.., |c: char| c.is_ascii_alphanumeric() || c == '_')
        .verify_map(|digits: &str| digits.parse::<u64>().ok())
        .parse_next(input)
}

/// The [`DdlError`] for a parse of `text` that failed with `error` and left `rest` unparsed.
pub(crate) fn parse_error(text: &str, rest: &str, error: ErrMode<ContextError>) -> DdlError {
    let at = Position::at(text, text.len().saturating_sub(rest.len()));
    let error = match error {
        ErrMode::Backtrack(e) | ErrMode::Cut(e) => e,
        // Only partial (streaming) input can be incomplete; DDL text is always complete.
        ErrMode::Incomplete(_) => ContextError::new(),
    };
    if let Some(problem) = error.cause().and_then(|c| c.downcast_ref::<ScriptProblem>()) {
        return DdlError::Script { at, problem: problem.clone() };
    }
    DdlError::Syntax { at, expected: expected(&error), found: found(rest) }
}

/// The innermost description of what was expected: the most specific one.
fn expected(error: &ContextError) -> String {
    let description = error.context().find_map(|c| match c {
        StrContext::Expected(StrContextValue::Description(d)) => Some(*d),
        _ => None,
    });
    description.unwrap_or("a statement").to_owned()
}

/// The token at `rest`, quoted, for the message: a whole word, or a single other character.
fn found(rest: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 40;
    let Some(first) = rest.chars().next() else { return "the end of the text".to_owned() };
    if first.is_whitespace() {
        return format!("{first:?}");
    }
    let word: String = if is_word_char(first) {
        rest.chars().take_while(|&c| is_word_char(c)).take(SHOWN_CHARS_MAX).collect()
    } else {
        first.to_string()
    };
    format!("{word:?}")
}

/// The field type called `word`, in any case. ENUM comes back with no values; the caller reads them.
pub(crate) fn field_type_named(word: &str) -> Option<FieldType> {
    FieldType::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(word))
}

/// Characters of a SQL word. Names are lexed more loosely than the name rule (any alphanumeric,
/// also a leading digit) so that a bad name reaches the schema builder and gets its error code.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_fit_u64_or_fail() {
        assert_eq!(number.parse_peek("42 x").map(|(_, n)| n), Ok(42));
        assert!(number.parse_peek("18446744073709551616").is_err());
        assert!(number.parse_peek("12ab").is_err());
    }

    #[test]
    fn found_names_the_token() {
        assert_eq!(found(""), "the end of the text");
        assert_eq!(found("abc def"), "\"abc\"");
        assert_eq!(found("(x"), "\"(\"");
    }
}
