//! Two independent parts of one long scan, run at once on two cores (decision 0174).

/// The length of text from which a scan's parts are run on two threads: below it, starting a
/// thread costs more than it saves.
pub(crate) const TWO_THREADS_FROM: usize = 256 << 10;

/// `a()` and `b()`: `b` on a second thread when `split` holds and this machine runs two
/// threads at once, both on this thread otherwise. A thread that cannot start, or fails,
/// leaves `b` to this thread, so the answer never depends on threads.
pub(crate) fn both<A, B: Send>(
    split: bool,
    a: impl FnOnce() -> A,
    b: impl Fn() -> B + Sync,
) -> (A, B) {
    if !(split && mcpl_classify::two_cores()) {
        return (a(), b());
    }
    let b = &b;
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new().spawn_scoped(scope, b).ok();
        let a = a();
        let b = other.and_then(|other| other.join().ok()).unwrap_or_else(b);
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parts_answer_whether_split_or_not() {
        for split in [false, true] {
            let text = "abc".repeat(1000);
            let (a, b) = both(split, || text.len(), || text.matches('b').count());
            assert_eq!((a, b), (3000, 1000), "split {split}");
        }
    }
}
