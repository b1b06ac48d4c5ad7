//! Lint: the reference's rules, our memory-index rule, robustness, the shared packs and our templates.

mod common;
mod lint_memory_rule;
mod lint_reference_rules;
mod lint_robustness;
mod lint_shared_packs;
mod templates;
