//! Asking an LLM through the Anthropic Messages API (HTTPS, blocking `ureq`).
//!
//! The API key comes from the environment (read in [`crate::settings`]) and
//! lives only in memory: it is never written to a pack, a log or an error.

use std::fmt;
use std::time::Duration;

/// The default API endpoint (overridable with `ENGRAM_ANTHROPIC_BASE_URL` or `ANTHROPIC_BASE_URL`).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The default model (overridable with `ENGRAM_ANTHROPIC_MODEL`); `engram build` polishes with it.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The small model `engram build` extracts with by default.
pub const DEFAULT_SMALL_MODEL: &str = "claude-haiku-4-5";
/// The API version header value.
pub const API_VERSION: &str = "2023-06-01";

/// An API key. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (`None` for an empty one).
    pub fn new(key: &str) -> Option<Self> {
        let key = key.trim();
        (!key.is_empty()).then(|| Self(key.to_owned()))
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How to reach the Anthropic API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicSettings {
    /// The key, when `ANTHROPIC_API_KEY` is set.
    pub api_key: Option<ApiKey>,
    /// Base URL without a trailing slash (`https://api.anthropic.com`).
    pub base_url: String,
    /// Model name.
    pub model: String,
}

impl Default for AnthropicSettings {
    fn default() -> Self {
        Self { api_key: None, base_url: DEFAULT_BASE_URL.to_owned(), model: DEFAULT_MODEL.to_owned() }
    }
}

/// Why a completion failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No API key is configured.
    #[error("ANTHROPIC_API_KEY is not set")]
    NoKey,
    /// The API answered with an error status.
    #[error("the Anthropic API answered HTTP {status}: {message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// The API's error message (or the start of the body).
        message: String,
    },
    /// The request could not be sent or the answer not read.
    #[error("cannot reach the Anthropic API at {url}: {message}")]
    Transport {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The answer is not a Messages API response with text.
    #[error("unexpected answer from the Anthropic API: {0}")]
    BadAnswer(String),
}

/// Sends one user message (with a system prompt) and returns the text of the answer.
pub fn complete(
    settings: &AnthropicSettings,
    system: &str,
    prompt: &str,
    max_tokens: u32,
) -> Result<String, LlmError> {
    let key = settings.api_key.as_ref().ok_or(LlmError::NoKey)?;
    let url = format!("{}/v1/messages", settings.base_url.trim_end_matches('/'));
    let body = serde_json::json!({
        "model": settings.model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": prompt}],
    })
    .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let transport = |e: ureq::Error| LlmError::Transport { url: url.clone(), message: e.to_string() };
    let mut response = agent
        .post(&url)
        .header("x-api-key", &key.0)
        .header("anthropic-version", API_VERSION)
        .header("content-type", "application/json")
        .send(body.as_bytes())
        .map_err(transport)?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().map_err(transport)?;
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    if !(200..300).contains(&status) {
        let message = json["error"]["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| text.chars().take(300).collect());
        return Err(LlmError::Status { status, message });
    }
    let parts: Vec<&str> = json["content"]
        .as_array()
        .map(|blocks| {
            blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        return Err(LlmError::BadAnswer(format!(
            "no text content in {}",
            text.chars().take(200).collect::<String>()
        )));
    }
    Ok(parts.join(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_never_shown() {
        let s = AnthropicSettings { api_key: ApiKey::new("sk-secret"), ..AnthropicSettings::default() };
        assert!(!format!("{s:?}").contains("sk-secret"));
        assert_eq!(ApiKey::new("  "), None);
    }
}
