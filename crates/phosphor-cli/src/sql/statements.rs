//! SQL statements split out of lines of text: each ends at a `;` that is not inside a quoted
//! string (`'…'`, `"…"`, a quote doubled inside), a `--` comment or a `/* … */` comment.

/// Lines gathered until they hold whole statements.
#[derive(Debug, Default)]
pub struct Statements {
    /// The text not yet made into a statement.
    text: String,
    /// Where scanning `text` resumes, and in what it was there.
    at: usize,
    state: State,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Code,
    /// Inside a quoted string or identifier that the byte ends.
    Quoted(u8),
    LineComment,
    BlockComment,
}

impl Statements {
    /// Adds a line (its line break added back).
    pub fn push_line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The next whole statement, without its `;` and the blanks around it; empty statements
    /// (`;;`) are skipped.
    pub fn next_statement(&mut self) -> Option<String> {
        loop {
            let end = self.scan()?;
            let statement: String = self.text.drain(..=end).collect();
            self.at = 0;
            let statement = statement[..statement.len() - 1].trim();
            if !statement.is_empty() {
                return Some(statement.to_owned());
            }
        }
    }

    /// The text after the last statement, if it holds more than blanks (a statement not ended).
    pub fn rest(&self) -> Option<&str> {
        Some(self.text.trim()).filter(|t| !t.is_empty())
    }

    /// Whether nothing but blanks waits for a `;`.
    pub fn is_empty(&self) -> bool {
        self.rest().is_none()
    }

    /// Forgets the text not yet made into a statement.
    pub fn clear(&mut self) {
        *self = Statements::default();
    }

    /// The offset of the `;` that ends the first statement, if the text holds one.
    fn scan(&mut self) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let mut i = self.at;
        while i < bytes.len() {
            let (b, next) = (bytes[i], bytes.get(i + 1).copied());
            match self.state {
                State::Code => match (b, next) {
                    (b';', _) => {
                        self.at = i;
                        return Some(i);
                    }
                    (b'\'' | b'"', _) => self.state = State::Quoted(b),
                    (b'-', Some(b'-')) => {
                        self.state = State::LineComment;
                        i += 1;
                    }
                    (b'/', Some(b'*')) => {
                        self.state = State::BlockComment;
                        i += 1;
                    }
                    _ => {}
                },
                // A doubled quote is one quote inside: it closes, then opens again.
                State::Quoted(q) if b == q => self.state = State::Code,
                State::LineComment if b == b'\n' => self.state = State::Code,
                State::BlockComment if b == b'*' && next == Some(b'/') => {
                    self.state = State::Code;
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.at = bytes.len();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> (Vec<String>, Option<String>) {
        let mut s = Statements::default();
        let mut out = Vec::new();
        for line in text.lines() {
            s.push_line(line);
            while let Some(st) = s.next_statement() {
                out.push(st);
            }
        }
        (out, s.rest().map(str::to_owned))
    }

    #[test]
    fn statements_end_at_semicolons_outside_strings_and_comments() {
        let (got, rest) = split(
            "SELECT 'a;b', \"c;d\" FROM t; -- x; y\nSELECT 1 /* ; */\n, 'it''s;' ;;\n  SELECT\n  2;\nSELECT 3",
        );
        assert_eq!(
            got,
            ["SELECT 'a;b', \"c;d\" FROM t", "-- x; y\nSELECT 1 /* ; */\n, 'it''s;'", "SELECT\n  2"]
        );
        assert_eq!(rest.as_deref(), Some("SELECT 3"));
    }
}
