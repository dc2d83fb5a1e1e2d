//! `Bound`'s properties against its oracle, o200k (`bpe-openai`), for one text: its pieces are
//! o200k's, its price is never under o200k's count, and what it keeps of the text for half that
//! count, from either end, costs o200k no more. Shared by the `bound` fuzz target and the test
//! that replays the fuzzer's finds (`tests/fuzz-regressions/`).

use mcpl_budget::{Bound, O200k, TokenEstimator};

/// o200k's count of `text` by the oracle, `bpe-openai`.
pub(crate) fn oracle(text: &str) -> u64 {
    bpe_openai::o200k_base().count(text) as u64
}

/// Why `text` breaks a property, if it does.
pub(crate) fn check(text: &str) -> Result<(), String> {
    let ours: Vec<&str> = Bound::pieces(text).map(|(_, piece)| piece).collect();
    let theirs: Vec<&str> = bpe_openai::o200k_base().split(text).collect();
    if ours != theirs {
        return Err(format!("pieces {ours:?}, o200k's {theirs:?}"));
    }
    let exact = oracle(text);
    if O200k.count(text) != exact {
        return Err(format!(
            "O200k counts {}, o200k's {exact}",
            O200k.count(text)
        ));
    }
    let bound = Bound.count(text);
    if bound < exact {
        return Err(format!("price {bound} under o200k's {exact}"));
    }
    let budget = exact / 2;
    let end = Bound.prefix_within(text, budget);
    let head = oracle(&text[..end]);
    if head > budget {
        return Err(format!("a prefix of {head} tokens kept for {budget}"));
    }
    let start = Bound.suffix_within(text, budget);
    let tail = oracle(&text[start..]);
    if tail > budget {
        return Err(format!("a suffix of {tail} tokens kept for {budget}"));
    }
    Ok(())
}
