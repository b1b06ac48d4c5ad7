//! `engram demo`: install the demo pack, prove it works over a real MCP round
//! trip with this very binary, and print what to paste into a client.

use std::process::ExitCode;

use crate::mcp::client::StdioClient;
use crate::ops::Engram;

/// Runs the demo.
pub fn run(engram: &Engram) -> anyhow::Result<ExitCode> {
    let packs_dir = engram.config().packs_dir.clone();
    if engram.packs().resolve("demo").is_err() {
        let msg =
            engram.install_engram("builtin:demo", &mut |_, _| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
        outln!("{msg}");
    } else {
        outln!("demo pack already installed in {}", packs_dir.display());
    }
    let bin = std::env::current_exe()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let packs = packs_dir.to_string_lossy().into_owned();
    runtime.block_on(async {
        let client = StdioClient::spawn(&bin, &["serve", "--packs-dir", &packs], &[]).await?;
        let tools = client.tool_names().await?;
        outln!("\n✓ engram serve answered over MCP stdio with {} tools: {}", tools.len(), tools.join(", "));
        let list = client.call("list_engrams", serde_json::json!({})).await?;
        outln!("\nlist_engrams →\n{}", list.text);
        let load = client
            .call("load_engram", serde_json::json!({"name": "demo", "query": "how do you remember things?"}))
            .await?;
        let preview: String = load.text.lines().take(12).collect::<Vec<_>>().join("\n");
        outln!("\nload_engram(demo) → (first lines)\n{preview}\n…");
        client.close().await?;
        anyhow::Ok(())
    })?;
    let bin_s = bin.display();
    outln!(
        "\n── Connect a client ──────────────────────────────────────────────\n\
Claude Code:\n  claude mcp add engram -- {bin_s} serve --packs-dir {packs}\n\n\
Claude Desktop (claude_desktop_config.json) / Cursor (.cursor/mcp.json):\n\
{{\n  \"mcpServers\": {{\n    \"engram\": {{\n      \"command\": \"{bin_s}\",\n      \"args\": [\"serve\", \"--packs-dir\", \"{packs}\"]\n    }}\n  }}\n}}\n\n\
Every memory the agent writes is a git commit: try `git -C {packs}/demo log --oneline`."
    );
    outln!("\n{}", on_path_hint(&bin));
    Ok(ExitCode::SUCCESS)
}

/// Where the `engram` a shell finds is, or how to make it this binary: the README's
/// `engram …` commands need it on `PATH`.
fn on_path_hint(bin: &std::path::Path) -> String {
    let same = |candidate: &std::path::Path| {
        std::fs::canonicalize(candidate).ok().is_some_and(|c| std::fs::canonicalize(bin).ok() == Some(c))
    };
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|dir| dir.join("engram")).find(|c| c.is_file()));
    match found.flatten() {
        Some(path) if same(&path) => format!("`engram` is on your PATH ({}).", path.display()),
        other => {
            let dir = bin.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let shadow = other
                .map(|p| format!(" (the `engram` your shell finds now is another one: {})", p.display()))
                .unwrap_or_default();
            format!(
                "── Use `engram` in a shell ───────────────────────────────────────\n\
This binary is {}; `engram` is not on your PATH{shadow}. Either\n  \
export PATH=\"{dir}:$PATH\"      (add the line to ~/.bashrc or ~/.zshrc), or\n  \
cargo install --path . --locked  (from the source folder: puts engram in ~/.cargo/bin)",
                bin.display()
            )
        }
    }
}
