//! Whether what a run keeps per round fits in memory, asked before the first round: a run
//! that would need more than the machine has is refused with a line naming the flag, not
//! aborted by the allocator part-way through.

/// Bytes of memory available for new allocations (`MemAvailable` of `/proc/meminfo`), or
/// `None` where that is not known.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// Checks that `count` items of `bytes_each` fit in the available memory; the error names
/// `flag` and its value, and how much the machine has.
pub fn check_fits(flag: &str, count: u64, bytes_each: u64) -> Result<(), String> {
    let need = (count as u128) * (bytes_each as u128);
    let Some(have) = available_bytes() else {
        return Ok(());
    };
    if need > have as u128 {
        return Err(format!(
            "{flag} {count}: keeping {bytes_each} bytes for each needs {}, more than the {} this \
             machine has available",
            human(need),
            human(have as u128)
        ));
    }
    Ok(())
}

fn human(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_the_machine_is_refused_with_the_flag() {
        let e = check_fits("--rounds", u64::MAX, 64).unwrap_err();
        assert!(
            e.starts_with("--rounds 18446744073709551615: keeping 64 bytes for each needs"),
            "{e}"
        );
        assert!(e.contains("EiB") && e.contains("available"), "{e}");
        assert!(check_fits("--rounds", 1000, 64).is_ok());
        assert_eq!(human(1536), "1.5 KiB");
    }
}
