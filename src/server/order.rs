//! The order a multi-host URL's hosts are tried in, before each engine ranks the hosts that
//! failed lately: the URL's order, or, with `load_balance_hosts=random`, shuffled anew for each
//! connect.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::deadline::now_nanos;

/// `0..n`, in order, or shuffled when `random` (Fisher-Yates on a xorshift seeded by the clock
/// and a counter: spreading connections needs no cryptographic randomness).
pub(crate) fn host_order(n: usize, random: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if random {
        static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
        let mut x = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ now_nanos();
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
            order.swap(i, j);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::host_order;

    #[test]
    fn every_host_once_in_either_order() {
        assert_eq!(host_order(4, false), [0, 1, 2, 3]);
        for _ in 0..50 {
            let mut o = host_order(5, true);
            o.sort_unstable();
            assert_eq!(o, [0, 1, 2, 3, 4]);
        }
        assert!(host_order(0, true).is_empty());
    }
}
