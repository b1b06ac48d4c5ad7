//! `create_engram_assistant` (a pack draft, written nowhere) and
//! `finalize_engram_draft` (the draft becomes a pack). Drafts are git-native:
//! the pack is made from the template (its `adopt:` commit), the generated
//! draft is one commit of its own, and every later edit is another.

use serde_json::{Map, Value, json};

use crate::jsonfmt::python_pretty;
use crate::ops::{Caller, Engram, EngramError, Result};
use crate::pack_path::PackPath;
use crate::store::{Changes, Edit};

/// Values that mean "you choose" (after strip + lower-case), as in the reference.
const MISSING: &[&str] = &["", "没有", "你来", "都可以", "随便", "无", "none", "n/a", "na"];

/// Characters a conversation is split into insights at.
const INSIGHT_BREAKS: &[char] = &['。', '\n', '！', '？', '!', '?', '；', ';'];

/// The two knowledge files and the example every draft has.
const KNOWLEDGE_OVERVIEW: &str = "knowledge/核心主题/方法论总览.md";
const KNOWLEDGE_CHECKLIST: &str = "knowledge/核心主题/执行清单.md";
const EXAMPLE_PATH: &str = "examples/典型场景.md";

/// The arguments of `create_engram_assistant`.
#[derive(Debug, Clone, Default)]
pub struct DraftRequest {
    /// `guided` or `from_conversation`.
    pub mode: String,
    /// Pack name (derived from the topic when missing).
    pub name: Option<String>,
    /// What the expert knows.
    pub topic: Option<String>,
    /// Whom it serves.
    pub audience: Option<String>,
    /// How it talks.
    pub style: Option<String>,
    /// Its limits.
    pub constraints: Option<String>,
    /// `meta.language` (default `zh-CN`).
    pub language: Option<String>,
    /// The conversation to mine for insights.
    pub conversation: Option<String>,
}

fn given(v: &Option<String>) -> Option<String> {
    let v = v.as_deref()?;
    (!MISSING.contains(&v.trim().to_lowercase().as_str())).then(|| v.trim().to_owned())
}

/// Up to 6 sentences of at least 6 characters from a conversation.
fn insights(conversation: &str) -> Vec<String> {
    conversation
        .split(INSIGHT_BREAKS)
        .map(|p| p.trim_matches([' ', '-', '\t']))
        .filter(|p| p.chars().count() >= 6)
        .take(6)
        .map(str::to_owned)
        .collect()
}

/// The reference's name normalisation: slashes and whitespace runs become `-`, ends trimmed of `-` and `.`.
fn normalise_name(raw: &str) -> String {
    let mut out = String::new();
    let mut last_dash = false;
    for c in raw.trim().chars() {
        if c == '/' || c == '\\' || c.is_whitespace() {
            if !last_dash {
                out.push('-');
            }
            last_dash = true;
        } else {
            out.push(c);
            last_dash = false;
        }
    }
    let out = out.trim_matches(['-', '.']).to_owned();
    if out.is_empty() || out == "." || out == ".." { "new-engram".to_owned() } else { out }
}

/// `create_engram_assistant`: the draft payload (pretty JSON); writes nothing.
pub fn create_engram_assistant(req: &DraftRequest) -> String {
    let mode = req.mode.as_str();
    if mode != "guided" && mode != "from_conversation" {
        return "草稿生成失败：mode 必须是 guided 或 from_conversation".to_owned();
    }
    let mut auto = Vec::new();
    let found = given(&req.conversation).map(|c| insights(&c)).unwrap_or_default();
    let topic = given(&req.topic).unwrap_or_else(|| {
        auto.push("topic");
        found.first().map(|i| i.chars().take(24).collect()).unwrap_or_else(|| "通用专家".to_owned())
    });
    let mut fill = |v: &Option<String>, field: &'static str, default: &str| {
        given(v).unwrap_or_else(|| {
            auto.push(field);
            default.to_owned()
        })
    };
    let audience = fill(&req.audience, "audience", "希望获得可执行建议的用户");
    let style = fill(&req.style, "style", "专业、清晰、可执行");
    let constraints = fill(&req.constraints, "constraints", "超出专业边界时先说明限制并建议求助专业人士");
    let name = match given(&req.name) {
        Some(_) => normalise_name(req.name.as_deref().unwrap_or_default()),
        None => {
            auto.push("name");
            normalise_name(&topic)
        }
    };
    let lines: Vec<String> = if found.is_empty() {
        auto.push("conversation_insights");
        vec![
            format!("围绕 {topic} 输出分步骤建议"),
            "优先给出低风险、可验证、可执行的方案".to_owned(),
            "每次建议都附带复盘和调整机制".to_owned(),
        ]
    } else {
        found.iter().take(4).cloned().collect()
    };
    let language = req.language.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| "zh-CN".to_owned());
    let description = format!("自动生成的 {topic} 专家 Engram（mode={mode}），建议创建后再人工补充细节。");
    let insight_lines: String = lines.iter().map(|l| format!("- {l}\n")).collect();
    let draft = json!({
        "mode": mode,
        "auto_filled_fields": auto,
        "meta": {
            "name": name, "description": description, "author": "auto-generated", "version": "1.0.0",
            "tags": [topic, "auto-generated"], "language": language,
        },
        "role_md": format!("# 角色定位\n你是 {topic} 方向的专家，面向 {audience} 提供建议。\n\n## 沟通风格\n- {style}\n- 先给结论，再给步骤，再给注意事项。\n"),
        "workflow_md": "# 工作流程\n1. 明确目标、约束和成功标准\n2. 基于现有信息给出可执行方案\n3. 提供风险提示与替代方案\n4. 约定复盘节点，持续迭代\n",
        "rules_md": format!("# 运作规则\n- 边界：{constraints}\n- 结论必须可执行，避免空泛建议\n- 信息不足时先提澄清问题\n\n## 知识提取规则\n- 对话中形成完整方法论时，主动提议 add_knowledge\n- 用户纠正知识库错误时，提议用 add_knowledge 更新\n"),
        "knowledge": [
            {"path": KNOWLEDGE_OVERVIEW, "summary": format!("{topic} 的核心方法论与判断框架"),
             "content": format!("# {topic} 方法论总览\n\n## 关键洞察\n{insight_lines}")},
            {"path": KNOWLEDGE_CHECKLIST, "summary": format!("{topic} 的落地步骤与检查清单"),
             "content": format!("# {topic} 执行清单\n\n## 建议步骤\n- 明确目标与约束\n- 拆解关键动作并设定里程碑\n- 每周复盘并根据反馈调整\n")},
        ],
        "examples": [{
            "id": format!("example_{name}_典型场景"), "path": EXAMPLE_PATH,
            "summary": format!("{topic} 的典型用户场景与解决方案"), "title": "典型场景",
            "uses": [KNOWLEDGE_OVERVIEW, KNOWLEDGE_CHECKLIST],
            "problem": format!("用户希望获得 {topic} 的可执行建议，但信息不完整。"),
            "assessment": "先澄清目标、资源、限制，再判断优先级。",
            "plan": "给出最小可执行方案 + 风险提示 + 复盘节点。",
            "review": "根据用户反馈迭代方案，并沉淀为可复用知识。",
            "tags": [name, "auto-generated"],
        }],
    });
    let notice = if auto.is_empty() {
        String::new()
    } else {
        format!("以下字段由系统自动补全，可能不完整，请确认后再落盘：{}", auto.join(", "))
    };
    let payload = json!({
        "requires_confirmation": true,
        "mode": mode,
        "name": name,
        "summary": {"description": description, "knowledge_files": [KNOWLEDGE_OVERVIEW, KNOWLEDGE_CHECKLIST], "example_files": [EXAMPLE_PATH]},
        "incomplete_notice": notice,
        "draft": draft,
    });
    python_pretty(&payload)
}

/// A draft that cannot be written: the reference's failure prefix and why.
fn bad_draft(why: impl std::fmt::Display) -> EngramError {
    EngramError::Init(crate::lang::Said::new(
        format!("落盘失败：写入草稿时发生错误：{why}"),
        format!("writing the draft failed: {why}"),
    ))
}

fn text(v: Option<&Value>) -> String {
    crate::pack::python_str(v, "")
}

/// A draft item's path: a normal pack path under `knowledge/` or `examples/` (the reference
/// wrote anywhere in the pack, even over `meta.json`), not an index.
fn item_path(item: &Map<String, Value>) -> Result<String> {
    let raw = item.get("path").ok_or_else(|| bad_draft("'path'"))?;
    let raw = text(Some(raw));
    let path = PackPath::parse_user(&raw).map_err(|e| bad_draft(format!("{raw}: {e}")))?;
    let p = path.as_str();
    let inside = p.starts_with("knowledge/") || p.starts_with("examples/");
    if !inside || !p.ends_with(".md") || p.rsplit('/').next().is_some_and(|f| f.starts_with("_index")) {
        return Err(bad_draft(format!("{raw}: a draft writes .md files under knowledge/ or examples/ only")));
    }
    Ok(p.to_owned())
}

fn items(draft: &Map<String, Value>, key: &str) -> Result<Vec<Map<String, Value>>> {
    match draft.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| v.as_object().cloned().ok_or_else(|| bad_draft(format!("{key} items must be objects"))))
            .collect(),
        Some(_) => Err(bad_draft(format!("{key} must be a list"))),
    }
}

/// An example (case) file: front matter (`id`, `title`, `uses`, `tags`, `updated_at`) and
/// the four sections of the reference's drafts. Drafts and `engram build` write them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExampleText {
    pub id: String,
    pub title: String,
    /// Pack-relative knowledge files the case uses.
    pub uses: Vec<String>,
    pub tags: Vec<String>,
    pub problem: String,
    pub assessment: String,
    pub plan: String,
    pub review: String,
}

impl ExampleText {
    /// The file's text.
    pub fn render(&self, today: &str) -> String {
        let list = |xs: &[String]| xs.iter().map(|x| format!("  - {x}\n")).collect::<String>();
        format!(
            "---\nid: {}\ntitle: {}\nuses:\n{}tags:\n{}updated_at: {today}\n---\n\n# {}\n\n## 背景\n{}\n\n## 评估过程\n{}\n\n## 最终方案\n{}\n\n## 结果复盘\n{}\n",
            self.id,
            self.title,
            list(&self.uses),
            list(&self.tags),
            self.title,
            self.problem,
            self.assessment,
            self.plan,
            self.review,
        )
    }

    /// Its lines in `examples/_index.md`.
    pub fn index_line(&self, path: &str, summary: &str) -> String {
        format!("- `{path}` - {summary}\n  uses: {}\n", self.uses.join(", "))
    }
}

/// The files of a draft (path → content) and the `meta.json` it gets, for pack `name`.
fn materialize(draft: &Map<String, Value>, name: &str, today: &str) -> Result<Vec<(String, String)>> {
    let knowledge = items(draft, "knowledge")?;
    let examples = items(draft, "examples")?;
    let mut meta = match draft.get("meta") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(bad_draft("meta must be an object")),
    };
    meta.insert("name".into(), json!(name));
    for (k, v) in [
        ("description", json!(format!("{name} 自动生成专家包"))),
        ("author", json!("auto-generated")),
        ("version", json!("1.0.0")),
        ("tags", json!([])),
        ("knowledge_count", json!(knowledge.len())),
        ("examples_count", json!(examples.len())),
    ] {
        meta.entry(k).or_insert(v);
    }
    let body = |k: &str| format!("{}\n", text(draft.get(k)).trim_end());
    let mut files = vec![
        ("meta.json".to_owned(), format!("{}\n", python_pretty(&Value::Object(meta)))),
        ("role.md".to_owned(), body("role_md")),
        ("workflow.md".to_owned(), body("workflow_md")),
        ("rules.md".to_owned(), body("rules_md")),
    ];
    let mut top = Vec::new();
    let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for item in &knowledge {
        let path = item_path(item)?;
        let content = format!("{}\n", text(item.get("content")).trim_end());
        if let Some(rest) = path.strip_prefix("knowledge/") {
            let summary = text(Some(item.get("summary").ok_or_else(|| bad_draft("'summary'"))?));
            let line = format!("- `{path}` - {summary}");
            match rest.rsplit_once('/') {
                Some((group, _)) => groups.entry(group.to_owned()).or_default().push(line),
                None => top.push(line),
            }
        }
        files.push((path, content));
    }
    let mut index = "## 知识索引\n\n".to_owned();
    if !top.is_empty() {
        index.push_str(&format!("### 核心主题\n{}\n\n", top.join("\n")));
    }
    if !groups.is_empty() {
        index.push_str("### 分组目录\n");
        for (g, lines) in &groups {
            index.push_str(&format!(
                "- `knowledge/{g}/_index.md` - {g} 主题分组。\n  → 详见 knowledge/{g}/_index.md\n"
            ));
            files
                .push((format!("knowledge/{g}/_index.md"), format!("## {g} 索引\n\n{}\n", lines.join("\n"))));
        }
    }
    files.push(("knowledge/_index.md".to_owned(), format!("{}\n", index.trim_end())));
    let mut ex_index = "## 案例索引\n\n### 自动生成案例\n".to_owned();
    for (i, item) in examples.iter().enumerate() {
        let n = i + 1;
        let path = item_path(item)?;
        let summary = text(Some(item.get("summary").ok_or_else(|| bad_draft("'summary'"))?));
        let or = |k: &str, d: String| item.get(k).map(|v| text(Some(v))).unwrap_or(d);
        let uses: Vec<String> = match item.get("uses") {
            Some(Value::Array(u)) => u.iter().map(|v| text(Some(v))).collect(),
            _ => Vec::new(),
        };
        let tags: Vec<String> = match item.get("tags") {
            Some(Value::Array(t)) => t.iter().map(|v| text(Some(v))).collect(),
            _ => vec![name.to_owned(), "example".into(), "auto-generated".into()],
        };
        let example = ExampleText {
            id: or("id", format!("example_{name}_{n}")),
            title: or("title", format!("案例{n}")),
            uses,
            tags,
            problem: or("problem", "待补充背景".into()),
            assessment: or("assessment", "待补充评估过程".into()),
            plan: or("plan", "待补充执行方案".into()),
            review: or("review", "待补充结果复盘".into()),
        };
        ex_index.push_str(&example.index_line(&path, &summary));
        files.push((path, example.render(today)));
    }
    files.push(("examples/_index.md".to_owned(), ex_index));
    Ok(files)
}

/// The arguments of `finalize_engram_draft`.
#[derive(Debug, Clone)]
pub struct FinalizeRequest {
    /// The payload of `create_engram_assistant`, or its `draft` alone.
    pub draft_json: String,
    /// Pack name (default: the draft's `meta.name`).
    pub name: Option<String>,
    /// Start from the grouped-knowledge template (its knowledge is replaced by the draft's).
    pub nested: bool,
    /// `false` cancels: nothing is written.
    pub confirm: bool,
}

impl Engram {
    /// `finalize_engram_draft`: makes the pack from the template (its first commit), writes
    /// the draft as one commit (`draft: …`), lints it. Any failure leaves nothing behind.
    pub fn finalize_engram_draft(&self, req: &FinalizeRequest, caller: &Caller) -> Result<String> {
        if !req.confirm {
            return Ok("已取消创建：未确认落盘。".to_owned());
        }
        let not_a_draft = || {
            EngramError::Init(crate::lang::Said::new(
                "落盘失败：draft_json 不是合法草稿 JSON。",
                "writing the draft failed: draft_json is not a draft's JSON.",
            ))
        };
        let payload: Value = serde_json::from_str(&req.draft_json).map_err(|_| not_a_draft())?;
        let Value::Object(mut object) = payload else { return Err(not_a_draft()) };
        let draft = match object.remove("draft") {
            Some(Value::Object(d)) => d,
            Some(other) => {
                object.insert("draft".into(), other);
                object
            }
            None => object,
        };
        let draft_name = match draft.get("meta") {
            Some(Value::Object(m)) => text(m.get("name")),
            _ => String::new(),
        };
        let target = req.name.clone().filter(|n| !n.is_empty()).unwrap_or(draft_name).trim().to_owned();
        if crate::pack::validate_new_name(&target).is_err() {
            return Err(EngramError::Init(crate::lang::Said::new(
                format!("落盘失败：非法名称 {target}"),
                format!("writing the draft failed: invalid name {target}"),
            )));
        }
        let today = self.now().format("%Y-%m-%d").to_string();
        // Everything is checked before the pack exists.
        let files = materialize(&draft, &target, &today)?;
        self.init_pack(&target, req.nested, crate::lang::Lang::Zh)?;
        let dir = self.config.packs_dir.join(&target);
        let now = self.now().timestamp();
        let written = self.with_repo(&dir, |repo| {
            repo.write(|snap| {
                let mut changes = Changes::default();
                for section in ["knowledge", "examples"] {
                    for old in snap.list_files_recursive(section)? {
                        changes.remove(old);
                    }
                }
                for (path, content) in &files {
                    changes.put(path.clone(), content.clone());
                }
                let message = caller
                    .commit_message(format!("draft: {target} — generated by {}", caller_tool(caller)), now);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
            })
        });
        if let Err(e) = written {
            let _ = crate::store::remove_pack_dir(&dir);
            return Err(bad_draft(e));
        }
        let msgs = crate::lint::lint_pack(&dir, &self.config.packs_dir);
        let errors = msgs.iter().filter(|m| m.level == crate::lint::Level::Error).count();
        let warnings = msgs.len() - errors;
        let mut lines =
            vec![format!("创建完成：{target}"), format!("校验结果：{errors} errors, {warnings} warnings")];
        lines.extend(msgs.iter().map(|m| format!("- {m}")));
        lines.push(
            if errors > 0 {
                "⚠️ 存在 error，请修复后再投入使用。"
            } else if warnings > 0 {
                "⚠️ 存在 warning，可继续使用，建议后续优化。"
            } else {
                "✅ 草稿已通过 lint 校验。"
            }
            .to_owned(),
        );
        Ok(lines.join("\n"))
    }
}

fn caller_tool(caller: &Caller) -> &str {
    if caller.tool.is_empty() { "finalize_engram_draft" } else { &caller.tool }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_insights_follow_the_reference() {
        assert_eq!(normalise_name("  a/b  c.. "), "a-b-c");
        assert_eq!(normalise_name(" .. "), "new-engram");
        assert_eq!(
            insights("我最近膝盖疼，跑步后更明显。想知道怎么恢复训练！还有饮食要注意什么？好").len(),
            3
        );
    }

    #[test]
    fn draft_paths_stay_in_knowledge_and_examples() {
        let item = |p: &str| json!({"path": p}).as_object().cloned().expect("object");
        assert!(item_path(&item("knowledge/a.md")).is_ok());
        for bad in ["../escape.md", "meta.json", "role.md", "knowledge/_index.md", "memory/x.md"] {
            assert!(item_path(&item(bad)).is_err(), "{bad}");
        }
    }
}
