fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    for seed in [0u64, 2] {
        let k0 = ptxvk_lower::random_cfg::structured_kernel(seed, n);
        let mut k = k0.clone();
        let t = std::time::Instant::now();
        ptxvk_lower::reducible::run(&mut k);
        let t1 = t.elapsed();
        ptxvk_lower::loop_exits::run(&mut k);
        let t2 = t.elapsed();
        let c = ptxvk_lower::cfg::Cfg::new(&k);
        let t3 = t.elapsed();
        let _f = ptxvk_lower::merges::LoopForest::new(&k, &c);
        let t4 = t.elapsed();
        let mut k = k0.clone();
        let t = std::time::Instant::now();
        let r = ptxvk_lower::structurize::run(&mut k);
        println!("structured seed {seed}: {} -> {} blocks, reducible {t1:?} exits {t2:?} cfg {t3:?} forest {t4:?} total {:?}, {:?}", k0.blocks.len(), k.blocks.len(), t.elapsed(), r.as_ref().err().map(|d| &d.message));
    }
}
