//! The busy-wait schedule of the SQLite family: how long to wait before trying a statement
//! again that met another connection's lock. It is SQLite's own `sqliteDefaultBusyCallback`
//! schedule; the SQLite wing follows it in its busy handler (on a blocking thread), the Turso
//! wing between retries (on the runtime's timer).

use std::time::Duration;

/// The delays in milliseconds; the last one repeats.
const DELAYS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/// The pause before retry number `attempt + 1` (0-based `attempt`).
pub(crate) fn delay(attempt: usize) -> Duration {
    Duration::from_millis(DELAYS_MS[attempt.min(DELAYS_MS.len() - 1)])
}

/// The total of the pauses before `attempt`: what the schedule has waited so far.
#[cfg(feature = "sqlite")]
pub(crate) fn waited_before(attempt: usize) -> Duration {
    let head = attempt.min(DELAYS_MS.len());
    let ms: u64 = DELAYS_MS[..head].iter().sum::<u64>()
        + DELAYS_MS[DELAYS_MS.len() - 1] * (attempt - head) as u64;
    Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_delay_repeats() {
        assert_eq!(delay(0), Duration::from_millis(1));
        assert_eq!(delay(11), Duration::from_millis(100));
        assert_eq!(delay(500), Duration::from_millis(100));
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn waited_sums_the_delays_before() {
        assert_eq!(waited_before(0), Duration::ZERO);
        assert_eq!(waited_before(3), Duration::from_millis(8));
        let head: u64 = DELAYS_MS.iter().sum();
        assert_eq!(waited_before(14), Duration::from_millis(head + 200));
        for a in 0..40 {
            assert_eq!(waited_before(a + 1), waited_before(a) + delay(a));
        }
    }
}
