//! Validated names of tables, fields and ENUM values: `[A-Za-z_][A-Za-z0-9_]{0,254}`,
//! case-sensitive.
//!
//! A [`Name`] can only be built through [`Name::new`], so code holding one never re-checks it. The
//! rule is the one of the seed documents (Tablestore column names, Oracle NoSQL field names); it keeps
//! names ASCII, so characters and bytes are the same count.

use std::fmt;

use super::limits::NAME_CHARS_MAX;

/// A name that matches `[A-Za-z_][A-Za-z0-9_]{0,254}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Box<str>);

/// Why a string is not a valid [`Name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    Empty,
    TooLong { chars: usize },
    BadFirstChar { found: char },
    BadChar { found: char, position: usize },
}

impl Name {
    /// Checks `text` against the name rule.
    pub fn new(text: &str) -> Result<Name, NameProblem> {
        check(text)?;
        Ok(Name(text.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn check(text: &str) -> Result<(), NameProblem> {
    let chars = text.chars().count();
    if chars > NAME_CHARS_MAX {
        return Err(NameProblem::TooLong { chars });
    }
    let mut iter = text.chars();
    let first = iter.next().ok_or(NameProblem::Empty)?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(NameProblem::BadFirstChar { found: first });
    }
    for (i, c) in iter.enumerate() {
        if !(c.is_ascii_alphanumeric() || c == '_') {
            return Err(NameProblem::BadChar { found: c, position: i + 1 });
        }
    }
    Ok(())
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = "names match [A-Za-z_][A-Za-z0-9_]*";
        match self {
            NameProblem::Empty => write!(f, "it is empty; {rule}, 1..={NAME_CHARS_MAX} characters"),
            NameProblem::TooLong { chars } => {
                write!(f, "it is {chars} characters; the limit is {NAME_CHARS_MAX}")
            }
            NameProblem::BadFirstChar { found } => {
                write!(f, "it starts with {found:?}; {rule}")
            }
            NameProblem::BadChar { found, position } => {
                write!(f, "character {position} is {found:?}; {rule}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_rule() {
        for ok in ["a", "_", "A_9", "productName", "_x1", &"a".repeat(NAME_CHARS_MAX)] {
            assert_eq!(Name::new(ok).map(|n| n.to_string()), Ok(ok.to_string()));
        }
    }

    #[test]
    fn rejects_everything_else() {
        assert_eq!(Name::new(""), Err(NameProblem::Empty));
        assert_eq!(Name::new("9a"), Err(NameProblem::BadFirstChar { found: '9' }));
        assert_eq!(Name::new("a-b"), Err(NameProblem::BadChar { found: '-', position: 1 }));
        assert_eq!(Name::new("aé"), Err(NameProblem::BadChar { found: 'é', position: 1 }));
        assert_eq!(Name::new("a b"), Err(NameProblem::BadChar { found: ' ', position: 1 }));
        let long = "a".repeat(NAME_CHARS_MAX + 1);
        assert_eq!(Name::new(&long), Err(NameProblem::TooLong { chars: NAME_CHARS_MAX + 1 }));
    }

    #[test]
    fn is_case_sensitive() {
        assert_ne!(Name::new("Color"), Name::new("color"));
    }
}
