use engram::mcp::client::StdioClient;
use serde_json::json;
use std::time::{Duration, Instant};
fn med(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}
fn main() -> anyhow::Result<()> {
    let packs = std::env::args().nth(1).unwrap();
    let bin = std::path::PathBuf::from("target/release/engram");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async {
        let c = StdioClient::spawn(&bin, &["serve", "--packs-dir", &packs], &[]).await?;
        let calls: Vec<(&str, serde_json::Value)> = vec![
            ("ping", json!({})),
            ("read_engram_file", json!({"name":"bench","path":"role.md"})),
            ("get_engram_info", json!({"name":"bench"})),
            ("read_engram_file", json!({"name":"bench","path":"memory/_index.md"})),
            ("load_engram", json!({"name":"bench","query":"bench"})),
        ];
        let mut t: Vec<Vec<Duration>> = vec![Vec::new(); calls.len()];
        for _ in 0..400 {
            for (i, (n, a)) in calls.iter().enumerate() {
                let s = Instant::now();
                let r = c.call(n, a.clone()).await?;
                t[i].push(s.elapsed());
                assert!(!r.is_error, "{}", r.text);
            }
        }
        for (i, (n, a)) in calls.iter().enumerate() {
            println!("{n} {a}: {:.1} µs", med(t[i].clone()));
        }
        c.close().await?;
        anyhow::Ok(())
    })
}
