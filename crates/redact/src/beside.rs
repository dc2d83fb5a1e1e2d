//! Two independent parts of one long scan, run at once on two cores (decision 0174).

use std::sync::atomic::{AtomicBool, Ordering};

/// The length of text from which a scan's parts are run on two threads: below it, starting a
/// thread costs more than it saves.
pub(crate) const TWO_THREADS_FROM: usize = 256 << 10;

/// `a()` and `b()`: `b` on a second thread when `split` holds and this machine runs two
/// threads at once, both on this thread otherwise. Whichever thread comes to `b` first runs
/// it: when `a` is done before the second thread has started (the other core was busy), this
/// thread runs `b` too, and the second thread, once it starts, finds it taken and ends. A
/// thread that cannot start, or fails, leaves `b` to this thread, so the answer never depends
/// on threads.
pub(crate) fn both<A, B: Send>(
    split: bool,
    a: impl FnOnce() -> A,
    b: impl Fn() -> B + Sync,
) -> (A, B) {
    if !(split && mcpl_classify::two_cores()) {
        return (a(), b());
    }
    let taken = AtomicBool::new(false);
    let take = || !taken.swap(true, Ordering::AcqRel);
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new()
            .spawn_scoped(scope, || take().then(&b))
            .ok();
        let a = a();
        let b = match take() {
            true => b(),
            false => other
                .and_then(|other| other.join().ok().flatten())
                .unwrap_or_else(&b),
        };
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parts_answer_whether_split_or_not_and_b_runs_once() {
        for split in [false, true] {
            for long_a in [false, true] {
                let text = "abc".repeat(1000);
                let runs = std::sync::atomic::AtomicUsize::new(0);
                let a = || match long_a {
                    true => (0..200).map(|_| text.matches('a').count()).sum::<usize>() / 200,
                    false => text.len() / 3,
                };
                let b = || {
                    runs.fetch_add(1, Ordering::Relaxed);
                    text.matches('b').count()
                };
                assert_eq!(both(split, a, b), (1000, 1000), "split {split}");
                assert_eq!(runs.load(Ordering::Relaxed), 1, "split {split}");
            }
        }
    }
}
