//! Waiting on conditions with a deadline. A test proves that something happens by waiting
//! for it; it proves that something did *not* happen by waiting for a later event that
//! could only come after it (a tick counter, a newer row) and then looking — never by
//! sleeping for a while.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(20);

/// Poll `check` until it returns true; panics naming `what` after `timeout`.
pub async fn until<F, Fut>(timeout: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Poll `check` until it returns `Some`; panics naming `what` after `timeout`.
pub async fn until_some<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`until`] for code that is not async (process start-up, blocking clients).
pub fn until_blocking(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_as_soon_as_the_condition_holds() {
        let mut n = 0;
        until(Duration::from_secs(5), "three polls", || {
            n += 1;
            let done = n >= 3;
            async move { done }
        })
        .await;
        assert_eq!(n, 3);
        let v = until_some(Duration::from_secs(5), "a value", || async { Some(7) }).await;
        assert_eq!(v, 7);
    }

    #[test]
    #[should_panic(expected = "waiting for the impossible")]
    fn panics_naming_what_it_waited_for() {
        until_blocking(Duration::from_millis(50), "the impossible", || false);
    }
}
