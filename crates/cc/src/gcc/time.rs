//! Conversion of local instants to the signed microsecond scale the GCC blocks compute on.

use std::time::Instant;

/// `t − base` in signed microseconds (negative if `t` is earlier), saturating.
pub fn micros_since(t: Instant, base: Instant) -> i64 {
    match t.checked_duration_since(base) {
        Some(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        None => {
            let d = base.saturating_duration_since(t);
            -i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn earlier_instants_are_negative() {
        let base = Instant::now() + Duration::from_secs(10);
        assert_eq!(micros_since(base + Duration::from_millis(3), base), 3_000);
        assert_eq!(micros_since(base - Duration::from_millis(3), base), -3_000);
    }
}
