//! Writes each fuzz target's seeds into `DIR/<target>/seed-<n>` (`make fuzz` starts from them).

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".into());
    for (name, _) in chartreg_fuzz_targets::TARGETS {
        let folder = std::path::Path::new(&dir).join(name);
        std::fs::create_dir_all(&folder)?;
        for (i, seed) in chartreg_fuzz_targets::seeds(name).iter().enumerate() {
            std::fs::write(folder.join(format!("seed-{i}")), seed)?;
        }
    }
    Ok(())
}
