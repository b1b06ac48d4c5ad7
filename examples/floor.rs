//! Times the benchmark floor alone: `cargo run --release --example floor --
//! <repository> [commits]` makes bare git2 commits on `<repository>` (each
//! appending a line to `memory/preferences.md`, as `cargo bench --bench core`
//! does on a bare copy of each pack) and prints p50/p95. Use it on a fresh
//! `git clone --bare` of a pack to see what the floor costs on the file
//! system as it is right now. With `--git-work` (on a clone with a working
//! tree), it also times the git work of a capture done the plain libgit2 way
//! (`benches/common/floor.rs`).

#[path = "../benches/common/floor.rs"]
mod floor;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or_else(|| anyhow::anyhow!("usage: floor <repository> [commits]"))?;
    let n = args.next().map(|s| s.parse::<usize>()).transpose()?.unwrap_or(200).max(1);
    let mut times = floor::time_bare_commits(std::path::Path::new(&dir), "memory/preferences.md", n)?;
    times.sort();
    let ms = |i: usize| times[i.min(n - 1)].as_secs_f64() * 1e3;
    println!("{n} bare git2 commits: p50 {:.3} ms, p95 {:.3} ms", ms(n / 2), ms(n * 95 / 100));
    // The git work of a capture (three memory files, working tree and index), on a clone with a
    // working tree: `floor <repository> [commits] --git-work`.
    if std::env::args().any(|a| a == "--git-work") {
        let paths = ["memory/preferences.md", "memory/_index.md", "memory/_index_full.md"];
        let mut times = floor::time_git_work(std::path::Path::new(&dir), &paths, n)?;
        times.sort();
        let ms = |i: usize| times[i.min(n - 1)].as_secs_f64() * 1e3;
        println!("{n} captures' git work: p50 {:.3} ms, p95 {:.3} ms", ms(n / 2), ms(n * 95 / 100));
    }
    Ok(())
}
