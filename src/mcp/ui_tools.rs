//! The `ui` toolset: `open_ui`, the local web page over the packs (`crate::ui`), started in this
//! process on first call and found on the next ones. The page's notes, graph and personal pages
//! use this server's `--notes-pack`, `--graph-pack` and `--user`.

use std::sync::Mutex;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};

use super::EngramServer;
use super::params::OpenUiParams;

/// The page this process serves, once started.
static RUNNING: Mutex<Option<crate::ui::Listening>> = Mutex::new(None);

/// The answer naming a running page.
fn answer(l: &crate::ui::Listening, note: &str) -> String {
    format!(
        "engram 网页 (web page): {}\n在浏览器中打开这个地址（含本次启动的令牌）。Open this address in a browser (it carries this launch's token); every change made there is one commit by client web-ui.{note}",
        l.url()
    )
}

#[tool_router(router = ui_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "启动（或找到）engram 的本地网页并返回地址：浏览、搜索、添加、修正、删除记忆，查看历史并撤销。Start (or find) engram's local web page over the packs and return its URL (with a per-launch token): browse, search, add, correct and delete memories, see the history and revert. `port`: 0 or absent picks a free port."
    )]
    async fn open_ui(&self, Parameters(p): Parameters<OpenUiParams>) -> Result<String, String> {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(l) = running.take() {
            let note = match p.port {
                Some(port) if port != 0 && port != l.addr.port() => {
                    format!(
                        "\n(已在端口 {} 运行 / already running on port {}; asked for {port})",
                        l.addr.port(),
                        l.addr.port()
                    )
                }
                _ => String::new(),
            };
            return Ok(answer(&l, &note));
        }
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], p.port.unwrap_or(0)));
        let opts = crate::ui::UiOptions { addr, token: None };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let engram = self.engram.clone();
        // The page shows what this server's tools use: its notes pack, graph pack and user.
        let stores = crate::ui::Stores {
            notes_pack: self.options.notes_pack.clone(),
            structured: self.graph_config.clone(),
        };
        let task = tokio::spawn(async move {
            crate::ui::serve_with(engram, opts, stores, |l| drop(tx.send(l.clone())), std::future::pending())
                .await
        });
        match rx.await {
            Ok(l) => {
                *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(l.clone());
                Ok(answer(&l, ""))
            }
            Err(_) => match task.await {
                Ok(Err(e)) => Err(format!("无法启动网页 (cannot start the web page): {e}")),
                _ => Err("无法启动网页 (cannot start the web page)".to_owned()),
            },
        }
    }
}
