//! Proposal branches (`engram serve --propose`): the ref a client's writes land on instead
//! of the pack's main branch, parsed once into [`ProposalBranch`].
//!
//! A proposal branch is `proposals/<name>`: `<name>` is one ref component made only of
//! `A-Z a-z 0-9 . _ -`, 1–64 characters, not starting with `.` or `-`, without `..`, not
//! ending in `.` or `.lock` — a valid git ref component on every platform, and a portable
//! file name (git keeps loose refs as files). An MCP client's name (`Claude Code`) or an
//! HTTP user id is turned into one by [`ProposalBranch::for_client`]; a branch a person
//! names (`engram review show coach proposals/alice`) is checked by
//! [`ProposalBranch::parse`], never sanitised.

use std::fmt;

/// The folder of refs under `refs/heads/` that holds proposals.
pub const PREFIX: &str = "proposals/";

/// Longest name (after `proposals/`), in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Why a string is not a proposal branch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given:?} is not a proposal branch: expected proposals/<name>, <name> 1–64 of A-Z a-z 0-9 . _ - (not starting with . or -, no .., not ending in . or .lock)"
)]
pub struct ProposalBranchError {
    /// What was given.
    pub given: String,
}

/// A validated proposal branch, `proposals/<name>`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProposalBranch(String);

impl ProposalBranch {
    /// Parses a branch a person or a tool argument names: `proposals/<name>`, or `<name>`
    /// alone, or the full `refs/heads/proposals/<name>`. Nothing is sanitised: a name that
    /// would need it is refused.
    pub fn parse(input: &str) -> Result<Self, ProposalBranchError> {
        let trimmed = input.trim();
        let name = trimmed.strip_prefix("refs/heads/").unwrap_or(trimmed);
        let name = name.strip_prefix(PREFIX).unwrap_or(name);
        if is_valid_name(name) {
            Ok(Self(name.to_owned()))
        } else {
            Err(ProposalBranchError { given: input.to_owned() })
        }
    }

    /// The proposal branch of an MCP client (its `clientInfo.name`) or an HTTP user: every
    /// character outside `A-Z a-z 0-9 . _ -` becomes `-`, runs of `-` and `.` shrink to one,
    /// leading and trailing `.`/`-` go, `.lock` at the end becomes `-lock`, and the name is
    /// cut at 64 characters; nothing left gives `client`.
    pub fn for_client(name: &str) -> Self {
        let mut out = String::new();
        for c in name.chars() {
            let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' };
            match (out.chars().last(), c) {
                (Some('-'), '-') | (Some('.'), '.') | (Some('-'), '.') | (Some('.'), '-') => {}
                _ => out.push(c),
            }
        }
        let mut name: String = out.trim_matches(['.', '-']).chars().take(MAX_NAME_CHARS).collect();
        name = name.trim_end_matches(['.', '-']).to_owned();
        if name.ends_with(".lock") {
            name.truncate(name.len() - ".lock".len());
            name.push_str("-lock");
        }
        if name.is_empty() {
            name = "client".to_owned();
        }
        if !is_valid_name(&name) {
            // A name Windows reserves (`CON`, `nul`): made portable.
            name = format!("{}-client", name.chars().take(MAX_NAME_CHARS - 7).collect::<String>());
        }
        if !is_valid_name(&name) {
            name = "client".to_owned();
        }
        debug_assert!(is_valid_name(&name), "{name:?}");
        Self(name)
    }

    /// `<name>`, without `proposals/`.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The branch name, `proposals/<name>`.
    pub fn branch(&self) -> String {
        format!("{PREFIX}{}", self.0)
    }

    /// The full ref, `refs/heads/proposals/<name>`.
    pub fn ref_name(&self) -> String {
        format!("refs/heads/{PREFIX}{}", self.0)
    }
}

impl fmt::Display for ProposalBranch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.0)
    }
}

impl fmt::Debug for ProposalBranch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProposalBranch({PREFIX}{})", self.0)
    }
}

fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.starts_with(['.', '-'])
        && !name.ends_with('.')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && crate::pack_path::PackPath::check_component(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_become_valid_branches() {
        for (client, want) in [
            ("Claude Code 1.0.3", "Claude-Code-1.0.3"),
            ("../../etc/passwd", "etc-passwd"),
            ("a..b", "a.b"),
            ("x.lock", "x-lock"),
            ("客户端", "client"),
            ("", "client"),
            ("-.-", "client"),
            ("refs/heads/main", "refs-heads-main"),
            ("CON", "CON-client"),
        ] {
            let b = ProposalBranch::for_client(client);
            assert_eq!(b.name(), want, "{client:?}");
            assert_eq!(ProposalBranch::parse(&b.branch()).as_ref(), Ok(&b));
        }
        let long = ProposalBranch::for_client(&"a".repeat(200));
        assert_eq!(long.name().len(), MAX_NAME_CHARS);
    }

    #[test]
    fn names_given_by_people_are_checked_not_sanitised() {
        assert_eq!(
            ProposalBranch::parse("proposals/alice").map(|b| b.ref_name()).as_deref(),
            Ok("refs/heads/proposals/alice")
        );
        assert_eq!(ProposalBranch::parse("alice").map(|b| b.branch()).as_deref(), Ok("proposals/alice"));
        assert_eq!(
            ProposalBranch::parse("refs/heads/proposals/bob").map(|b| b.to_string()).as_deref(),
            Ok("proposals/bob")
        );
        for bad in ["", "proposals/", "a b", "../x", "proposals/a/b", "x.lock", ".x", "a..b", "main~1", "a:b"]
        {
            assert!(ProposalBranch::parse(bad).is_err(), "{bad:?}");
        }
    }
}
