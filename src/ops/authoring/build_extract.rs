//! What `engram build` extracts from documents: the heuristic drafts (no API key), the
//! small model's extraction and the large model's polish (Anthropic Messages API through
//! [`crate::llm`]). A model's answer is one JSON object; what it leaves out or gets wrong
//! (an example that uses a file the pack does not have) falls back to the heuristic draft.

use std::collections::HashMap;

use serde_json::Value;

use super::build::{BuildModels, Document, KnowledgeDoc};
use super::draft::ExampleText;
use crate::llm::{AnthropicSettings, LlmError};
use crate::markdown_text;

/// Characters of one document sent to the extracting model.
const DOC_CHARS: usize = 12_000;
/// Characters of all documents sent to it.
const ALL_DOCS_CHARS: usize = 48_000;
/// The answer budget of each model call.
const MAX_TOKENS: u32 = 4096;
/// Most examples a build writes.
const MAX_EXAMPLES: usize = 5;

/// Words of a sentence that states a rule.
const RULE_WORDS: &[&str] = &[
    "必须", "不要", "禁止", "务必", "应该", "避免", "不得", "切勿", "must", "should", "never", "always",
    "don't", "do not", "avoid",
];
/// Words of a heading over an example.
const EXAMPLE_WORDS: &[&str] =
    &["案例", "示例", "例子", "实例", "场景", "example", "case", "scenario", "faq"];

/// What the extract stage writes.
#[derive(Debug, Clone)]
pub(crate) struct Extracted {
    /// `meta.json` description.
    pub description: String,
    /// `meta.json` tags.
    pub tags: Vec<String>,
    /// `role.md`.
    pub role: String,
    /// `workflow.md`.
    pub workflow: String,
    /// `rules.md`.
    pub rules: String,
    /// Knowledge index summaries by the path the index line names.
    pub summaries: HashMap<String, String>,
    /// Examples: (index summary, file).
    pub examples: Vec<(String, ExampleText)>,
}

/// `text` in at most `max` characters, for what goes to a model or into an error (never
/// into a pack: that text is cut whole by [`markdown_text::fit`]).
fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

/// Sentences that state rules (`必须`, `never`, …), whole, from the documents' paragraphs
/// and list items: at most `n`, without repeats, none over 200 characters.
fn rule_sentences(docs: &[Document], n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for doc in docs {
        for block in markdown_text::blocks(&doc.text) {
            for s in markdown_text::sentences(&block.text) {
                let lower = s.to_lowercase();
                let words = s.chars().count();
                if (6..=200).contains(&words)
                    && RULE_WORDS.iter().any(|w| lower.contains(w))
                    && !out.iter().any(|o| o == s)
                {
                    out.push(s.to_owned());
                    if out.len() == n {
                        return out;
                    }
                }
            }
        }
    }
    out
}

/// The items of the documents' numbered lists, whole, at most `n`, each with its document.
fn steps(docs: &[Document], n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for doc in docs {
        let items = markdown_text::blocks(&doc.text).into_iter().filter(|b| {
            b.kind == markdown_text::BlockKind::Item { ordered: true } && b.text.chars().count() <= 160
        });
        for item in items {
            let from = markdown_text::plain_inline(&doc.title);
            out.push(if markdown_text::mostly_chinese([item.text.as_str()]) {
                format!("{}（{from}）", item.text)
            } else {
                format!("{} ({from})", item.text)
            });
            if out.len() == n {
                return out;
            }
        }
    }
    out
}

/// A section's body as an example's plan: as written when short, else its paragraphs and
/// items as plain text, whole, up to about `max` characters.
fn plan_text(body: &str, max: usize) -> String {
    let body = body.trim();
    if body.chars().count() <= max {
        return body.to_owned();
    }
    let mut out = String::new();
    for block in markdown_text::blocks(body) {
        let text = markdown_text::fit(&block.text, max);
        if !out.is_empty() && out.chars().count() + text.chars().count() > max {
            break;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&text);
    }
    out
}

/// Sections whose heading names an example (`## 案例：…`, `## Example: …`): (heading, body, doc index).
fn example_sections(docs: &[Document]) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let mut current: Option<(String, String)> = None;
        for line in doc.text.lines() {
            let t = line.trim_start();
            if t.starts_with('#') {
                if let Some((h, b)) = current.take()
                    && !b.trim().is_empty()
                {
                    out.push((h, b, i));
                }
                let heading = t.trim_start_matches('#').trim();
                let lower = heading.to_lowercase();
                if EXAMPLE_WORDS.iter().any(|w| lower.contains(w)) {
                    current = Some((heading.to_owned(), String::new()));
                }
            } else if let Some((_, b)) = current.as_mut() {
                b.push_str(line);
                b.push('\n');
            }
        }
        if let Some((h, b)) = current
            && !b.trim().is_empty()
        {
            out.push((h, b, i));
        }
    }
    out
}

/// The knowledge file of document `i` that holds `needle` (else its first file).
fn file_of(knowledge: &[KnowledgeDoc], i: usize, needle: &str) -> Option<String> {
    let k = knowledge.get(i)?;
    k.content_files()
        .find(|(_, t)| t.contains(needle))
        .or_else(|| k.content_files().next())
        .map(|(p, _)| p.clone())
}

/// The drafts without a model: role and workflow from the documents' titles and numbered
/// steps, rules from sentences that state rules, summaries from first lines, examples from
/// sections headed as examples (else one per document, at most [`MAX_EXAMPLES`]).
pub(crate) fn heuristic(name: &str, docs: &[Document], knowledge: &[KnowledgeDoc]) -> Extracted {
    let zh = markdown_text::mostly_chinese(docs.iter().map(|d| d.text.as_str()));
    let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
    let shown = titles.iter().take(3).copied().collect::<Vec<_>>();
    let description = if zh {
        format!("{name}：由 {} 份文档构建的专家（{}）", docs.len(), shown.join("、"))
    } else {
        format!("{name}: an expert built from {} documents ({})", docs.len(), shown.join(", "))
    };
    let areas: String = titles.iter().map(|t| format!("- {t}\n")).collect();
    let role = if zh {
        format!(
            "# 角色\n\n你是 {name} 专家，依据以下资料回答问题：先确认问题，再引用资料给出可执行的建议。\n\n## 擅长领域\n{areas}\n## 沟通风格\n- 先确认问题，再依据资料回答，说明理由。\n- 资料没有覆盖的内容，明确说出来，并建议如何查证。\n"
        )
    } else {
        format!(
            "# Role\n\nYou are the {name} expert. You answer from the documents below: confirm the question first, then give actionable advice that cites them.\n\n## Areas\n{areas}\n## Style\n- Confirm the question, then answer from the documents and say why.\n- Say so when the documents do not cover something, and how to check it.\n"
        )
    };
    let found = steps(docs, 8);
    let mut workflow = if zh {
        "# 工作流程\n\n1. 明确用户的问题、背景与目标。\n2. 查看知识索引，用 read_engram_file 读取相关资料。\n3. 依据资料回答，注明出处；资料不足时说明。\n4. 用户的重要偏好与决定用 capture_memory 记下来。\n".to_owned()
    } else {
        "# Workflow\n\n1. Clarify the user's question, context and goal.\n2. Check the knowledge index and read the relevant documents with read_engram_file.\n3. Answer from the documents and cite them; say when they are not enough.\n4. Capture the user's important preferences and decisions with capture_memory.\n".to_owned()
    };
    if !found.is_empty() {
        workflow.push_str(if zh { "\n## 资料中的步骤\n" } else { "\n## Steps from the documents\n" });
        for (i, s) in found.iter().enumerate() {
            workflow.push_str(&format!("{}. {s}\n", i + 1));
        }
    }
    let mut rules = String::from(if zh { "# 规则\n\n" } else { "# Rules\n\n" });
    let sentences = rule_sentences(docs, 12);
    if sentences.is_empty() {
        rules.push_str(if zh {
            "- 只依据资料回答；不确定时说明，不编造。\n"
        } else {
            "- Answer from the documents; when unsure, say so and do not make things up.\n"
        });
    }
    for s in &sentences {
        rules.push_str(&format!("- {s}\n"));
    }
    rules.push_str(if zh {
        "\n## Onboarding\n- 了解用户的背景、目标与限制条件。\n"
    } else {
        "\n## Onboarding\n- Learn the user's background, goals and constraints.\n"
    });
    let summaries = knowledge.iter().map(|k| (k.path.clone(), k.summary.clone())).collect();
    let mut examples = Vec::new();
    let sections = example_sections(docs);
    let tags = vec![name.to_owned(), "example".to_owned(), "engram-build".to_owned()];
    for (heading, body, i) in sections.into_iter().take(MAX_EXAMPLES) {
        let uses: Vec<String> = file_of(knowledge, i, &heading).into_iter().collect();
        let example = ExampleText {
            title: heading.clone(),
            uses,
            tags: tags.clone(),
            problem: markdown_text::summary(&body, 200),
            assessment: if zh {
                format!("依据：{}", docs[i].title)
            } else {
                format!("From: {}", docs[i].title)
            },
            plan: plan_text(&body, 600),
            review: if zh { "待补充结果复盘".into() } else { "To be reviewed.".into() },
            ..ExampleText::default()
        };
        examples.push((markdown_text::summary(&body, 80), example));
    }
    if examples.is_empty() {
        for (i, doc) in docs.iter().enumerate().take(MAX_EXAMPLES.min(3)) {
            let title = if zh {
                format!("关于「{}」的问题", doc.title)
            } else {
                format!("A question on {}", doc.title)
            };
            let uses: Vec<String> = file_of(knowledge, i, "").into_iter().collect();
            let example = ExampleText {
                title: title.clone(),
                uses,
                tags: tags.clone(),
                problem: if zh {
                    format!("用户询问与「{}」相关的问题。", doc.title)
                } else {
                    format!("The user asks about {}.", doc.title)
                },
                assessment: if zh {
                    format!("查阅资料「{}」。", doc.title)
                } else {
                    format!("Read the document {}.", doc.title)
                },
                plan: markdown_text::summary(&doc.text, 300),
                review: if zh { "待补充结果复盘".into() } else { "To be reviewed.".into() },
                ..ExampleText::default()
            };
            examples.push((title, example));
        }
    }
    let tags = vec!["engram-build".to_owned()];
    Extracted { description, tags, role, workflow, rules, summaries, examples }
}

/// The JSON object of a model's answer (code fences and text around it are ignored).
fn answer_json(text: &str) -> Result<serde_json::Map<String, Value>, LlmError> {
    let start = text.find('{');
    let end = text.rfind('}');
    let slice = match (start, end) {
        (Some(s), Some(e)) if e > s => &text[s..=e],
        _ => return Err(LlmError::BadAnswer(format!("no JSON object in {:?}", cut(text, 200)))),
    };
    match serde_json::from_str(slice) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(LlmError::BadAnswer(format!("not a JSON object: {:?}", cut(slice, 200)))),
    }
}

fn string(m: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn settings(models: &BuildModels, model: &str) -> AnthropicSettings {
    AnthropicSettings { model: model.to_owned(), ..models.api.clone() }
}

/// The documents as the extracting model sees them.
fn documents_prompt(docs: &[Document], knowledge: &[KnowledgeDoc]) -> String {
    let mut out = String::new();
    let mut budget = ALL_DOCS_CHARS;
    for (doc, k) in docs.iter().zip(knowledge) {
        let text = cut(&doc.text, DOC_CHARS.min(budget.max(200)));
        budget = budget.saturating_sub(text.chars().count());
        let files: Vec<&str> = k.content_files().map(|(p, _)| p.as_str()).collect();
        out.push_str(&format!(
            "<document source=\"{}\" index_path=\"{}\" files=\"{}\" title=\"{}\">\n{text}\n</document>\n",
            doc.rel,
            k.path,
            files.join(","),
            doc.title
        ));
    }
    out
}

const EXTRACT_SYSTEM: &str = "You turn a folder of documents into an expert pack for the Engram memory format. Answer with one JSON object and nothing else.";

/// The small model's extraction; what it leaves out keeps the heuristic draft.
pub(crate) fn extract_with_model(
    models: &BuildModels,
    name: &str,
    docs: &[Document],
    knowledge: &[KnowledgeDoc],
    draft: Extracted,
) -> Result<Extracted, LlmError> {
    let prompt = format!(
        "Pack name: {name}\n\nWrite in the language of the documents (Chinese documents: Chinese).\n\
Return a JSON object with these keys:\n\
- \"description\": one sentence: who this expert is and when to load it\n\
- \"tags\": 3-6 short tags\n\
- \"role\": Markdown for role.md (background, style, areas of expertise)\n\
- \"workflow\": Markdown for workflow.md (numbered steps the expert follows)\n\
- \"rules\": Markdown for rules.md (the rules the documents state; end with a \"## Onboarding\" section)\n\
- \"summaries\": an object mapping each document's index_path to a one-line summary\n\
- \"examples\": up to {MAX_EXAMPLES} objects {{\"title\", \"summary\", \"problem\", \"assessment\", \"plan\", \"review\", \"uses\"}}, \"uses\" listing files of the documents below\n\n\
{}",
        documents_prompt(docs, knowledge)
    );
    let text =
        crate::llm::complete(&settings(models, &models.extract_model), EXTRACT_SYSTEM, &prompt, MAX_TOKENS)?;
    let m = answer_json(&text)?;
    let mut x = draft;
    if let Some(d) = string(&m, "description") {
        x.description = crate::memory::single_line(&d);
    }
    if let Some(Value::Array(tags)) = m.get("tags") {
        let tags: Vec<String> = tags
            .iter()
            .filter_map(Value::as_str)
            .map(crate::memory::single_line)
            .filter(|t| !t.is_empty())
            .take(8)
            .collect();
        if !tags.is_empty() {
            x.tags = tags;
        }
    }
    for (key, slot) in [("role", &mut x.role), ("workflow", &mut x.workflow), ("rules", &mut x.rules)] {
        if let Some(v) = string(&m, key) {
            *slot = v;
        }
    }
    if let Some(Value::Object(s)) = m.get("summaries") {
        for k in knowledge {
            if let Some(v) = s.get(&k.path).and_then(Value::as_str).map(crate::memory::single_line)
                && !v.is_empty()
            {
                x.summaries.insert(k.path.clone(), v);
            }
        }
    }
    let known: Vec<&str> = knowledge.iter().flat_map(|k| k.files.iter().map(|(p, _)| p.as_str())).collect();
    if let Some(Value::Array(items)) = m.get("examples") {
        let mut examples = Vec::new();
        for item in items.iter().filter_map(Value::as_object).take(MAX_EXAMPLES) {
            let Some(title) = string(item, "title").map(|t| crate::memory::single_line(&t)) else { continue };
            let uses: Vec<String> = match item.get("uses") {
                Some(Value::Array(u)) => u
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|p| known.contains(p))
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            let or = |k: &str| string(item, k).unwrap_or_else(|| "-".to_owned());
            let example = ExampleText {
                title: title.clone(),
                uses,
                tags: vec![name.to_owned(), "example".to_owned(), "engram-build".to_owned()],
                problem: or("problem"),
                assessment: or("assessment"),
                plan: or("plan"),
                review: or("review"),
                ..ExampleText::default()
            };
            examples.push((string(item, "summary").unwrap_or(title), example));
        }
        if !examples.is_empty() {
            x.examples = examples;
        }
    }
    Ok(x)
}

const POLISH_SYSTEM: &str = "You are the editor of an expert pack for the Engram memory format. Improve the drafts: clear, specific, faithful to the knowledge, same language. Answer with one JSON object and nothing else.";

/// The large model's polish of role, workflow and rules; a part it leaves out stays as drafted.
pub(crate) fn polish_with_model(
    models: &BuildModels,
    name: &str,
    x: &Extracted,
    knowledge: &[KnowledgeDoc],
) -> Result<(String, String, String), LlmError> {
    let index: String = knowledge
        .iter()
        .map(|k| format!("- {} — {}\n", k.path, x.summaries.get(&k.path).unwrap_or(&k.summary)))
        .collect();
    let prompt = format!(
        "Pack name: {name}\nDescription: {}\n\nKnowledge index:\n{index}\n\
Return a JSON object {{\"role\", \"workflow\", \"rules\"}}, each the polished Markdown of that file (keep the \"## Onboarding\" section of rules).\n\n\
<role.md>\n{}\n</role.md>\n<workflow.md>\n{}\n</workflow.md>\n<rules.md>\n{}\n</rules.md>\n",
        x.description, x.role, x.workflow, x.rules
    );
    let text =
        crate::llm::complete(&settings(models, &models.polish_model), POLISH_SYSTEM, &prompt, MAX_TOKENS)?;
    let m = answer_json(&text)?;
    let pick =
        |k: &str, draft: &str| format!("{}\n", string(&m, k).unwrap_or_else(|| draft.to_owned()).trim_end());
    Ok((pick("role", &x.role), pick("workflow", &x.workflow), pick("rules", &x.rules)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(title: &str, text: &str) -> Document {
        Document { rel: format!("{title}.md"), title: title.into(), text: text.into() }
    }

    #[test]
    fn heuristics_find_rules_steps_and_examples_in_chinese_and_english() {
        let docs = vec![
            doc(
                "深蹲",
                "# 深蹲\n\n膝盖疼时必须先做风险筛查。\n\n1. 热身五分钟\n2. 徒手深蹲\n\n## 案例：久坐上班族\n每天久坐八小时，膝盖不适。\n",
            ),
            doc("Sleep", "# Sleep\n\nYou should sleep eight hours. Never train through sharp pain.\n"),
        ];
        let knowledge = super::super::build::knowledge_layout(&docs);
        let x = heuristic("coach", &docs, &knowledge);
        assert!(x.rules.contains("膝盖疼时必须先做风险筛查。"), "{}", x.rules);
        assert!(x.rules.contains("Never train through sharp pain."), "{}", x.rules);
        assert!(x.workflow.contains("热身五分钟（深蹲）"), "{}", x.workflow);
        assert_eq!(x.examples.len(), 1);
        assert_eq!(x.examples[0].1.title, "案例：久坐上班族");
        assert_eq!(x.examples[0].1.uses, vec!["knowledge/深蹲.md".to_owned()]);
        assert!(x.role.starts_with("# 角色"), "mostly Chinese: {}", x.role);
    }

    #[test]
    fn english_documents_give_english_drafts_of_whole_sentences() {
        let docs = vec![doc(
            "Backups",
            "# Backups\n\nYou should keep three copies, e.g. on a disk\nand in the cloud. Test restores\nmonthly; never trust an untested backup.\n\n| You must | not read tables |\n|---|---|\n| a | b |\n",
        )];
        let knowledge = super::super::build::knowledge_layout(&docs);
        let x = heuristic("ops", &docs, &knowledge);
        assert!(x.role.starts_with("# Role") && x.rules.starts_with("# Rules"), "{}", x.rules);
        assert!(
            x.rules.contains("- You should keep three copies, e.g. on a disk and in the cloud.\n"),
            "a sentence across lines and past `e.g.` stays whole: {}",
            x.rules
        );
        assert!(
            x.rules.contains("- Test restores monthly; never trust an untested backup.\n"),
            "{}",
            x.rules
        );
        assert!(!x.rules.contains("tables"), "{}", x.rules);
    }

    #[test]
    fn a_models_answer_is_the_json_object_in_it() {
        let m = answer_json("```json\n{\"role\": \"r\"}\n```").expect("json");
        assert_eq!(m["role"], "r");
        assert!(answer_json("no json here").is_err());
    }
}
