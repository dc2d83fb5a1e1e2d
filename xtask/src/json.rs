//! A small JSON reader for the e2e transcripts, so xtask stays on the standard library.
//!
//! It reads RFC 8259 JSON into [`Json`]; numbers become `f64`, objects keep their order, and a
//! lone UTF-16 surrogate escape becomes U+FFFD. It is not a validator: the transcripts come from
//! `serde_json`, and the checks only need to find strings and walk the tree.

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// The deepest nesting read; transcripts are a few levels deep.
const MAX_DEPTH: usize = 128;

impl Json {
    /// Reads one JSON document; anything after it but whitespace is an error.
    pub(crate) fn parse(text: &str) -> Result<Json, String> {
        let mut reader = Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
        };
        let value = reader.value(0)?;
        reader.skip_whitespace();
        if reader.at == reader.bytes.len() {
            Ok(value)
        } else {
            Err(reader.error("trailing characters"))
        }
    }

    /// The value of an object's field.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    /// The items of an array; empty for anything else.
    pub(crate) fn items(&self) -> &[Json] {
        match self {
            Json::Array(items) => items,
            _ => &[],
        }
    }

    /// Calls `found` with every string in the tree, keys included, skipping the fields named in
    /// `skip` at any depth.
    pub(crate) fn visit_strings(&self, skip: &[&str], found: &mut impl FnMut(&str)) {
        match self {
            Json::String(text) => found(text),
            Json::Array(items) => items.iter().for_each(|i| i.visit_strings(skip, found)),
            Json::Object(fields) => {
                for (key, value) in fields.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
                    found(key);
                    value.visit_strings(skip, found);
                }
            }
            Json::Null | Json::Bool(_) | Json::Number(_) => {}
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.at)
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.bytes.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", byte as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.skip_whitespace();
        match self.bytes.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                let mut fields = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Object(fields));
                }
                loop {
                    self.skip_whitespace();
                    let key = self.string()?;
                    self.expect(b':')?;
                    fields.push((key, self.value(depth + 1)?));
                    if !self.eat(b',') {
                        self.expect(b'}')?;
                        return Ok(Json::Object(fields));
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if !self.eat(b',') {
                        self.expect(b']')?;
                        return Ok(Json::Array(items));
                    }
                }
            }
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while matches!(
                    self.bytes.get(self.at),
                    Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                ) {
                    self.at += 1;
                }
                self.text[start..self.at]
                    .parse()
                    .map(Json::Number)
                    .map_err(|_| self.error("not a number"))
            }
            _ => Err(self.error("expected a value")),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return Err(self.error("expected a string"));
        }
        self.at += 1;
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote or backslash at once: both are ASCII, so the
            // run ends on a character boundary.
            let run = self.bytes[self.at..]
                .iter()
                .position(|b| matches!(b, b'"' | b'\\'))
                .ok_or_else(|| self.error("unterminated string"))?;
            out.push_str(&self.text[self.at..self.at + run]);
            self.at += run + 1;
            if self.bytes[self.at - 1] == b'"' {
                return Ok(out);
            }
            let escape = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| self.error("unterminated string"))?;
            self.at += 1;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let unit = self.hex4()?;
                    let code = if (0xD800..0xDC00).contains(&unit)
                        && self.text[self.at..].starts_with("\\u")
                    {
                        let back = self.at;
                        self.at += 2;
                        let low = self.hex4()?;
                        if (0xDC00..0xE000).contains(&low) {
                            0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            self.at = back;
                            unit
                        }
                    } else {
                        unit
                    };
                    out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                }
                _ => return Err(self.error("unknown escape")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("short \\u escape"))?;
        let unit = u32::from_str_radix(digits, 16).map_err(|_| self.error("bad \\u escape"))?;
        self.at += 4;
        Ok(unit)
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn reads_what_serde_json_writes() {
        let value = Json::parse(
            r#" {"a": [1, -2.5e3, true, false, null], "b\"\\": "x\u00e9\ud83e\udeb6\ud800!\n", "c": {}} "#,
        )
        .unwrap();
        assert_eq!(
            value.get("a").unwrap().items(),
            [
                Json::Number(1.0),
                Json::Number(-2500.0),
                Json::Bool(true),
                Json::Bool(false),
                Json::Null
            ]
        );
        assert_eq!(
            value.get("b\"\\").unwrap().as_str(),
            Some("xé🪶\u{FFFD}!\n")
        );
        assert_eq!(value.get("c"), Some(&Json::Object(Vec::new())));
        let mut strings = Vec::new();
        value.visit_strings(&["b\"\\"], &mut |s| strings.push(s.to_owned()));
        assert_eq!(strings, ["a", "c"]);
    }

    #[test]
    fn says_where_it_stopped() {
        assert_eq!(
            Json::parse("[1,]").unwrap_err(),
            "expected a value at byte 3"
        );
        assert_eq!(
            Json::parse("{} x").unwrap_err(),
            "trailing characters at byte 3"
        );
        assert_eq!(
            Json::parse("\"abc").unwrap_err(),
            "unterminated string at byte 1"
        );
        assert!(Json::parse(&"[".repeat(200)).is_err());
    }
}
