//! Every committed corpus file of every fuzz target (`fuzz/corpus/<target>/`), and each
//! target's seeds, run through the target: what the fuzzer once found stays tested.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

use std::path::Path;

use chartreg_fuzz_targets::{TARGETS, seeds};

#[test]
fn every_corpus_file_and_seed_runs_through_its_target() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut ran = 0;
    for (name, target) in TARGETS {
        let seeds = seeds(name);
        assert!(!seeds.is_empty(), "{name} has seeds");
        for seed in seeds {
            target(&seed);
            ran += 1;
        }
        let dir = corpus.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (make fuzz writes it)", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: a committed corpus");
        for file in files {
            let data = std::fs::read(&file).expect("read corpus file");
            target(&data);
            ran += 1;
        }
    }
    assert!(ran > 100, "{ran} inputs replayed");
}
