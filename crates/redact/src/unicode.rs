//! One character as redaction reads it: its compatibility form (NFKC), in lower case, with
//! every Default_Ignorable_Code_Point and control character gone.
//!
//! Fullwidth `ｈｔｔｐｓ`, mathematical `𝐡𝐭𝐭𝐩𝐬` and circled digits read as the ASCII they stand
//! for, and an invisible character (U+034F, a variation selector, a Hangul filler, U+17B4, a
//! tag) splits nothing, whichever Unicode category it is in. The data is Unicode's own, through
//! ICU4X, not a list of ours.

use icu_normalizer::ComposingNormalizerBorrowed;
use icu_properties::CodePointSetData;
use icu_properties::props::DefaultIgnorableCodePoint;

/// Whether a character is dropped: a control character (C0, DEL, C1), a format character that
/// hides or reorders text, or any Default_Ignorable_Code_Point.
pub(crate) fn is_dropped(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(c, '\u{0080}'..='\u{009F}' | '\u{061C}' | '\u{2028}' | '\u{2029}' | '\u{FFF9}'..='\u{FFFB}')
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

/// Calls `each` with what a non-dropped character reads as: its NFKC form in lower case, one
/// or more characters (`ﬁ` reads as `f`, `i`). ASCII is folded without a table.
pub(crate) fn fold(c: char, mut each: impl FnMut(char)) {
    if c.is_ascii() {
        each(c.to_ascii_lowercase());
        return;
    }
    let mut buffer = [0u8; 4];
    let nfkc = ComposingNormalizerBorrowed::new_nfkc().normalize(c.encode_utf8(&mut buffer));
    for folded in nfkc.chars() {
        if is_dropped(folded) {
            continue;
        }
        for lower in folded.to_lowercase() {
            each(lower);
        }
    }
}

/// Whether a character reads as itself in lower case (so a view may map it byte for byte).
pub(crate) fn folds_to_itself(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_uppercase();
    }
    let mut same = true;
    let mut count = 0;
    fold(c, |f| {
        count += 1;
        same &= f == c;
    });
    same && count == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars().filter(|&c| !is_dropped(c)) {
            fold(c, |f| out.push(f));
        }
        out
    }

    #[test]
    fn compatibility_forms_read_as_ascii() {
        assert_eq!(
            folded("ＨＴＴＰＳ://ｅｘａｍｐｌｅ．ｃｏｍ"),
            "https://example.com"
        );
        assert_eq!(folded("𝐡𝐭𝐭𝐩𝐬"), "https");
        assert_eq!(folded("ﬁle①"), "file1");
    }

    #[test]
    fn default_ignorables_outside_the_format_category_are_dropped() {
        for c in [
            '\u{034F}',
            '\u{FE0F}',
            '\u{FE00}',
            '\u{115F}',
            '\u{1160}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{17B4}',
            '\u{17B5}',
            '\u{180B}',
            '\u{E0001}',
            '\u{E0100}',
            '\u{00AD}',
            '\u{200B}',
            '\u{2060}',
            '\u{FEFF}',
        ] {
            assert!(is_dropped(c), "U+{:04X}", c as u32);
            assert_eq!(folded(&format!("to{c}ken")), "token", "U+{:04X}", c as u32);
        }
        for c in ['a', 'é', '中', '\u{0301}', ' '] {
            assert!(!is_dropped(c), "U+{:04X}", c as u32);
        }
    }
}
