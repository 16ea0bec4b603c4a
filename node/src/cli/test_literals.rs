//! Literal builders shared by the CLI's unit tests.

use super::Literal;

pub fn num(text: &str) -> Literal {
    Literal::Number(text.to_owned())
}

pub fn string(text: &str) -> Literal {
    Literal::String(text.to_owned())
}

pub fn key(pairs: &[(&str, Literal)]) -> Vec<(String, Literal)> {
    pairs.iter().map(|(f, l)| ((*f).to_owned(), l.clone())).collect()
}
