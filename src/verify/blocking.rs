//! Verification for async callers: CPU-bound checks moved off the async threads.
//!
//! A [`Verifier`](super::Verifier) is `Send + Sync` and cheap to share behind an `Arc`, but
//! its checks are CPU work (a keyless set is four P-256 and one P-384 signature checks) that
//! must not run on an async executor's threads. [`BlockingVerifications`] runs them on
//! tokio's blocking threads, at most `concurrency` at once, so a burst of requests queues
//! for a permit instead of spawning unbounded threads.
//!
//! ```
//! use mansign::verify::BlockingVerifications;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = BlockingVerifications::new(2);
//! let answer = pool.run(|| 6 * 7).await?;
//! assert_eq!(answer, 42);
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
//! ```

use std::sync::Arc;
use tokio::sync::Semaphore;

/// Why a blocking verification did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlockingError {
    #[error("the verification pool is closed")]
    Closed,
    #[error("the verification task failed: {0}")]
    Task(String),
}

/// Runs closures on tokio's blocking threads, at most `concurrency` at once.
#[derive(Debug, Clone)]
pub struct BlockingVerifications {
    permits: Arc<Semaphore>,
    concurrency: usize,
}

impl BlockingVerifications {
    /// At most `concurrency` (at least 1) verifications at once.
    pub fn new(concurrency: usize) -> Self {
        let concurrency = concurrency.max(1);
        BlockingVerifications {
            permits: Arc::new(Semaphore::new(concurrency)),
            concurrency,
        }
    }

    /// One verification per available CPU.
    pub fn per_cpu() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// Verifications waiting for a permit or running.
    pub fn in_use(&self) -> usize {
        self.concurrency - self.permits.available_permits()
    }

    /// Runs `work` on a blocking thread once a permit is free. Must be called from within a
    /// tokio runtime.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, BlockingError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| BlockingError::Closed)?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|e| BlockingError::Task(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_more_than_the_concurrency_at_once() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let pool = BlockingVerifications::new(2);
            let running = Arc::new(AtomicUsize::new(0));
            let peak = Arc::new(AtomicUsize::new(0));
            let mut tasks = Vec::new();
            for _ in 0..16 {
                let (pool, running, peak) = (pool.clone(), running.clone(), peak.clone());
                tasks.push(tokio::spawn(async move {
                    pool.run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                    .unwrap()
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert!(peak.load(Ordering::SeqCst) <= 2);
            assert_eq!(pool.in_use(), 0);
        });
    }

    #[test]
    fn a_panicking_task_is_an_error_not_a_crash() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let pool = BlockingVerifications::new(1);
            let err = pool.run(|| panic!("boom")).await;
            assert!(matches!(err, Err::<(), _>(BlockingError::Task(_))));
            // the permit came back
            assert_eq!(pool.run(|| 1).await.unwrap(), 1);
        });
    }
}
