//! A small MCP client, over a child process's stdio or over streamable HTTP,
//! used by `engram demo`, the benchmarks and the integration tests to drive a
//! real `engram serve`.

use std::path::Path;

use rmcp::model::{CallToolRequestParams, ClientConfig, GetPromptRequestParams, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};

/// The stdio client's historical name: every [`McpClient`] constructor works on it.
pub type StdioClient = McpClient;

/// A client talking to an `engram serve`: a child over stdio, or a server over HTTP.
pub struct McpClient {
    service: RunningService<RoleClient, ClientConfig>,
    pid: Option<u32>,
}

/// How the HTTP client resumes a response stream that broke: three tries within about two
/// seconds, then the call fails. rmcp's default retries forever with a doubling pause, so a
/// call in flight when its server died never returned.
fn give_up_soon() -> rmcp::transport::common::client_side_sse::ExponentialBackoff {
    let mut policy = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
    policy.max_times = Some(3);
    policy.base_duration = std::time::Duration::from_millis(200);
    policy.max_delay = Some(std::time::Duration::from_secs(1));
    policy
}

/// What a tool call returned.
#[derive(Debug, Clone)]
pub struct ToolReply {
    /// The text content, joined.
    pub text: String,
    /// `isError`.
    pub is_error: bool,
    /// `structuredContent`, when present.
    pub structured: Option<serde_json::Value>,
}

impl McpClient {
    /// Spawns `bin args…` and performs the MCP handshake. The child's environment
    /// is cleared except for [`crate::settings::CHILD_INHERITED_ENV`] (`PATH`,
    /// `HOME`), then `envs` is set: the caller's `ENGRAM_*` variables never reach it.
    pub async fn spawn(bin: &Path, args: &[&str], envs: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::spawn_with(bin, args, envs, None, ClientConfig::default()).await
    }

    /// Like [`McpClient::spawn`], with the child's working directory set to `cwd`
    /// (the server's project root is `cwd/.claude/engram`).
    pub async fn spawn_in(
        bin: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        cwd: &Path,
    ) -> anyhow::Result<Self> {
        Self::spawn_with(bin, args, envs, Some(cwd), ClientConfig::default()).await
    }

    /// Like [`McpClient::spawn_in`], introducing itself as the MCP client `name` (what a
    /// server records in `Engram-Client` and names `--propose` branches after).
    pub async fn spawn_named(
        bin: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        cwd: &Path,
        name: &str,
    ) -> anyhow::Result<Self> {
        let info = ClientConfig::new(Default::default(), Implementation::new(name, "1.0"));
        Self::spawn_with(bin, args, envs, Some(cwd), info).await
    }

    async fn spawn_with(
        bin: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        cwd: Option<&Path>,
        info: ClientConfig,
    ) -> anyhow::Result<Self> {
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(args).env_clear().envs(crate::settings::child_env());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let (transport, _stderr) =
            TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn()?;
        let pid = transport.id();
        let service = info.serve(transport).await?;
        Ok(Self { service, pid })
    }

    /// Connects to `engram serve --http` at `url` (e.g. `http://127.0.0.1:8765/mcp`),
    /// sending `token` as a bearer token when given, and performs the MCP handshake.
    pub async fn connect_http(url: &str, token: Option<&str>) -> anyhow::Result<Self> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        config.retry_config = std::sync::Arc::new(give_up_soon());
        if let Some(t) = token {
            config = config.auth_header(t.to_owned());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = ClientConfig::default().serve(transport).await?;
        Ok(Self { service, pid: None })
    }

    /// The server process id (stdio clients only).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Calls a tool with JSON arguments (an object).
    pub async fn call(&self, tool: &str, args: serde_json::Value) -> anyhow::Result<ToolReply> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let serde_json::Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let res = self.service.call_tool(params).await?;
        let text = res
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(ToolReply { text, is_error: res.is_error.unwrap_or(false), structured: res.structured_content })
    }

    /// The names of the listed tools.
    pub async fn tool_names(&self) -> anyhow::Result<Vec<String>> {
        Ok(self.service.list_all_tools().await?.into_iter().map(|t| t.name.to_string()).collect())
    }

    /// The full tool list as JSON.
    pub async fn tools_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self.service.list_all_tools().await?)?)
    }

    /// The listed resources as JSON.
    pub async fn resources_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self.service.list_all_resources().await?)?)
    }

    /// Reads a resource's text.
    pub async fn read_resource(&self, uri: &str) -> anyhow::Result<String> {
        let res = self.service.read_resource(rmcp::model::ReadResourceRequestParams::new(uri)).await?;
        let mut out = String::new();
        for c in res.contents {
            if let rmcp::model::ResourceContents::TextResourceContents { text, .. } = c {
                out.push_str(&text);
            }
        }
        Ok(out)
    }

    /// Calls a tool and returns every text item separately.
    pub async fn call_items(&self, tool: &str, args: serde_json::Value) -> anyhow::Result<Vec<String>> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let serde_json::Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let res = self.service.call_tool(params).await?;
        Ok(res.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect())
    }

    /// Gets a prompt's text.
    pub async fn prompt(&self, name: &str) -> anyhow::Result<String> {
        let res = self.service.get_prompt(GetPromptRequestParams::new(name.to_owned())).await?;
        Ok(res
            .messages
            .iter()
            .filter_map(|m| m.content.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// The listed prompts as JSON.
    pub async fn prompts_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self.service.list_all_prompts().await?)?)
    }

    /// A prompt's whole `prompts/get` result as JSON (description and messages).
    pub async fn prompt_json(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(
            self.service.get_prompt(GetPromptRequestParams::new(name.to_owned())).await?,
        )?)
    }

    /// Closes stdin and waits for the server to exit.
    pub async fn close(self) -> anyhow::Result<()> {
        self.service.cancel().await?;
        Ok(())
    }
}
