//! Work spread over every CPU the process may use, for start-up: loading runs its per-file and
//! per-manifest phases through [`in_parallel`], and the binary its per-file lookups.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `work` applied to consecutive chunks of `items` on every CPU the process may use, with the
/// results in order. Each thread takes the next chunk when it has finished one.
pub fn in_parallel<'t, T: Sync, R: Send>(
    items: &'t [T],
    per_chunk: usize,
    work: impl Fn(&'t [T]) -> R + Sync,
) -> Vec<R> {
    let chunks: Vec<&'t [T]> = items.chunks(per_chunk).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(chunks.len());
    if threads <= 1 {
        return chunks.into_iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let run = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else {
                return done;
            };
            done.push((i, work(chunk)));
        }
    };
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(chunks.len()).collect();
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(run)).collect();
        let mine = run();
        // A panic in another thread is a bug: let it surface as one.
        let theirs = others
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        for (i, result) in mine.into_iter().chain(theirs) {
            results[i] = Some(result);
        }
    });
    results.into_iter().flatten().collect()
}
