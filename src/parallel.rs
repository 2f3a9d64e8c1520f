//! Reading and verifying many files or documents on every core, with the results in input
//! order.
//!
//! Parsing a file and verifying a document are CPU-bound (parsing, signature checks, the
//! diff) and independent of the others, and a [`Verifier`](crate::verify::Verifier) is
//! `Sync`, so a directory of manifests is spread over a bounded set of scoped threads that
//! take the next item from a shared counter. Results are put back in input order, so output and exit code do not depend on
//! the scheduling. No thread outlives the call; a thread that cannot be started only means
//! fewer workers (the calling thread always works too).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Most threads one call uses, whatever the machine: verification is fast enough that more
/// would mostly add contention on the caches' locks.
pub const MAX_VERIFICATION_THREADS: usize = 16;

/// The default number of verification threads: the available parallelism, at most
/// [`MAX_VERIFICATION_THREADS`].
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_VERIFICATION_THREADS)
}

/// `f` over every item on up to `workers` threads; the results in the items' order.
pub fn map_in_order<T, R, F>(items: &[T], workers: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let workers = workers.min(items.len()).min(MAX_VERIFICATION_THREADS);
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
            .collect();
        let mut finished = vec![work()];
        for helper in helpers {
            match helper.join() {
                Ok(done) => finished.push(done),
                // A panic in a worker is a bug, not an input error: surface it as the
                // sequential loop would have.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (i, r) in finished.into_iter().flatten() {
            slots[i] = Some(r);
        }
    });
    // Every index below items.len() was taken exactly once by the counter.
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order_whatever_the_worker_count() {
        let items: Vec<u64> = (0..1000).collect();
        for workers in [0, 1, 2, 7, 64] {
            let out = map_in_order(&items, workers, |x| x * 2);
            assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn no_items_no_results() {
        let out: Vec<u8> = map_in_order(&[] as &[u8], 4, |x| *x);
        assert!(out.is_empty());
    }

    #[test]
    fn the_work_is_spread_over_more_than_one_thread() {
        let items: Vec<u32> = (0..64).collect();
        let ids = map_in_order(&items, 4, |_| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            std::thread::current().id()
        });
        let distinct: std::collections::HashSet<_> = ids.into_iter().collect();
        assert!(distinct.len() > 1, "{distinct:?}");
    }
}
