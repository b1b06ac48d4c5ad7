//! HTML for the page: escaping, the frame every page shares, and the interface texts.
//!
//! Memory text is untrusted: every piece of it goes through [`esc`] and is shown as text
//! (`white-space: pre-wrap`), never as markup, and the Content-Security-Policy (auth.rs) allows
//! no inline script, so even a missed escape could not run one.

use axum::http::HeaderMap;

pub(crate) use crate::lang::Lang;

/// The cookie that keeps the language chosen with the switch.
pub(crate) const LANG_COOKIE: &str = "engram_ui_lang";

impl Lang {
    /// `?lang=` first, then the switch's cookie, then `Accept-Language`; English otherwise.
    pub(crate) fn choose(query: Option<&str>, headers: &HeaderMap) -> Lang {
        let pick = Lang::parse;
        if let Some(l) = query.and_then(pick) {
            return l;
        }
        let cookie = headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == LANG_COOKIE)
            .and_then(|(_, v)| pick(v));
        if let Some(l) = cookie {
            return l;
        }
        let accept =
            headers.get(axum::http::header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()).unwrap_or("");
        // The first language the browser lists that we have.
        accept.split(',').find_map(|part| pick(part.split(';').next().unwrap_or(""))).unwrap_or(Lang::En)
    }

    /// The interface text for `key` (the key itself when missing).
    pub(crate) fn t(self, key: &'static str) -> &'static str {
        let zh = self == Lang::Zh;
        TEXTS.iter().find(|(k, _, _)| *k == key).map_or(key, |(_, z, e)| if zh { z } else { e })
    }
}

/// `(key, 中文, English)`.
const TEXTS: &[(&str, &str, &str)] = &[
    ("packs", "记忆包", "Packs"),
    ("pack", "记忆包", "Pack"),
    ("memories", "记忆", "Memories"),
    ("history", "历史", "History"),
    ("activity", "活动", "Activity"),
    ("overview", "概览", "Overview"),
    (
        "no_packs",
        "还没有记忆包。在下面创建或安装一个（或用 `engram init <名字>`）。",
        "No packs yet. Create or install one below (or `engram init <name>`).",
    ),
    ("last_commit", "最新提交", "Last commit"),
    ("categories", "分类", "Categories"),
    ("search", "搜索", "Search"),
    ("filter", "筛选", "Filter"),
    ("all", "全部", "All"),
    ("category", "分类", "Category"),
    ("type", "类型", "Type"),
    ("tags", "标签（逗号分隔）", "Tags (comma-separated)"),
    ("summary", "摘要", "Summary"),
    ("content", "内容", "Text"),
    ("add", "添加记忆", "Add a memory"),
    ("save", "保存修改", "Save the correction"),
    ("edit", "修正", "Correct"),
    ("delete", "删除", "Delete"),
    ("revert", "撤销这次提交", "Revert this"),
    ("previous", "上一页", "Previous"),
    ("next", "下一页", "Next"),
    ("shown", "条记忆", "memories"),
    ("no_memories", "没有符合条件的记忆。", "No memories match."),
    ("as_of", "显示的是提交", "Showing commit"),
    ("stale_title", "记忆已被修改", "The memory changed"),
    (
        "stale_text",
        "在你打开这一页之后，这条记忆已被修改或删除，你的修改没有写入。下面是它现在的内容；你的文字保留在表单里。",
        "The memory was changed or deleted after this page was opened, so your change was not written. Below is what it says now; your text is kept in the form.",
    ),
    ("stale_gone", "这条记忆已不存在。", "The memory no longer exists."),
    ("error", "出错了", "Something went wrong"),
    ("back", "返回", "Back"),
    ("done", "已完成", "Done"),
    ("commit", "提交", "Commit"),
    ("tool", "工具", "Tool"),
    ("client", "客户端", "Client"),
    ("changes", "改动", "Changes"),
    ("role", "角色", "Role"),
    ("workflow", "工作流程", "Workflow"),
    ("rules", "规则", "Rules"),
    ("language", "语言", "Language"),
    ("main_nav", "主导航", "Main navigation"),
    ("page_nav", "翻页", "Pages"),
    ("expires", "过期", "Expires"),
    ("read_only_view", "只读：记忆包在提交", "Read only: the pack as of commit"),
    ("to_current", "回到当前", "back to the current memories"),
    ("view_as_of", "查看此时的记忆", "View the memories as of this commit"),
    ("undo_last", "撤销最近的工具提交", "Undo the last tool commits"),
    ("how_many", "提交数", "How many"),
    ("sync", "同步", "Sync"),
    ("sync_now", "立即同步", "Sync now"),
    ("sync_ok", "正常", "ok"),
    ("sync_failed", "失败", "failed"),
    ("sync_conflicts", "有冲突", "conflicts"),
    ("sync_never", "从未同步", "never"),
    ("remote", "远端", "Remote"),
    ("branch", "分支", "branch"),
    ("ahead", "个提交待推送", "ahead"),
    ("behind", "个提交待拉取", "behind"),
    ("never_fetched", "尚未拉取", "never fetched"),
    ("last_sync", "上次同步", "last sync"),
    ("just_now", "刚刚", "just now"),
    ("last_report", "上次同步的报告", "Last sync's report"),
    ("memory_conflicts", "记忆冲突", "Memory conflicts"),
    (
        "memory_conflicts_hint",
        "同一条记忆在两台设备上被不同地修改。选择保留哪个版本：每个选择是一次提交。",
        "The same memory was changed differently on two devices. Choose what stays: each choice is one commit.",
    ),
    ("mine", "我的", "Mine"),
    ("theirs", "对方的", "Theirs"),
    ("deleted_there", "（已删除）", "(deleted)"),
    ("keep_mine", "保留我的", "Keep mine"),
    ("keep_theirs", "保留对方的", "Keep theirs"),
    ("keep_both", "两个都保留", "Keep both"),
    ("file_conflicts", "文件冲突副本", "Conflict copies of files"),
    ("keep_copy", "采用这个版本", "Keep this version"),
    ("discard_copy", "丢弃副本", "Discard the copy"),
    ("copy_same", "副本与文件相同。", "The copy is the same as the file."),
    ("copy_binary", "无法按文本比较。", "Cannot be compared as text."),
    ("expired", "已过期", "Expired"),
    ("archived", "已归档", "Archived"),
    ("likely_duplicate", "疑似重复", "Likely duplicate"),
    ("merge_these", "合并这两条", "Merge these"),
    (
        "merge_help",
        "这两条会变成下面这一条（一次提交），原来的两条移到 <分类>-archive.md。",
        "The two become the one below (one commit); both originals move to <category>-archive.md.",
    ),
    ("merge", "合并", "Merge"),
    ("menu", "操作", "Actions"),
    ("memory_history", "这条记忆的历史", "History of this memory"),
    ("all_commits", "全部提交", "all commits"),
    ("more_filters", "更多筛选", "More filters"),
    ("select", "选择", "Select"),
    ("delete_selected", "删除所选（一次提交）", "Delete the selected (one commit)"),
    ("full_page", "在单独页面查看", "on its own page"),
    ("search_hint", "中文或英文，按相关度排序", "Chinese or English, best first"),
    ("from", "从", "From"),
    ("to", "到", "To"),
    ("show_old", "显示已过期和已归档的记忆", "Show expired and archived entries"),
    ("ranked", "按相关度排序", "best first"),
    ("capped", "最多显示", "showing at most"),
    ("past_entries", "已过期和已归档的记忆（只读）", "Expired and archived entries (read only)"),
    ("consolidate", "合并这个分类", "Consolidate this category"),
    (
        "consolidate_help",
        "这个分类的全部记忆会被合并成下面这一条（一次提交），原来的记忆移到 <分类>-archive.md。",
        "Every entry of this category becomes the one below (one commit); the originals move to <category>-archive.md.",
    ),
    ("types", "类型", "Types"),
    ("files", "文件", "Files"),
    ("lint", "检查", "Lint"),
    ("lint_ok", "通过", "clean"),
    ("damaged", "已损坏", "damaged"),
    ("damaged_hint", "其他包不受影响。修复方法：", "The other packs are unaffected. How to repair it:"),
    ("errors", "错误", "errors"),
    ("warnings", "警告", "warnings"),
    ("knowledge", "知识", "Knowledge"),
    ("examples", "示例", "Examples"),
    ("no_remote_short", "无远端", "no remote"),
    ("create_pack", "创建记忆包", "Create a pack"),
    ("pack_name", "名字", "Name"),
    ("nested", "带一个知识分组", "with a knowledge group"),
    ("install_pack", "安装记忆包", "Install a pack"),
    ("install_source", "Git 地址、本地路径或注册表名", "Git URL, local path or registry name"),
    ("installing", "正在安装…", "Installing…"),
    (
        "file_stale",
        "在你打开这一页之后，这个文件已被修改，你的修改没有写入。下面是它现在的内容；你的文字保留在编辑框里。",
        "The file changed after this page was opened, so your change was not written. Below is what it says now; your text is kept in the editor.",
    ),
    ("file_now", "文件现在的内容", "The file now"),
    ("file_text", "文件内容", "File text"),
    ("save_file", "保存（一次提交）", "Save (one commit)"),
    ("edit_file", "编辑", "Edit"),
    ("notes", "笔记", "Notes"),
    (
        "notes_help",
        "notes 工具（store / recall / forget）使用的分类和笔记，保存在记忆包",
        "The categories and notes of the notes tools (store / recall / forget), kept in pack",
    ),
    ("description", "描述", "Description"),
    ("describe", "保存描述", "Save description"),
    ("new_category", "新建分类", "New category"),
    ("add_note", "添加笔记", "Add a note"),
    ("title", "标题", "Title"),
    ("importance", "重要性", "Importance"),
    ("imp_1", "琐碎", "trivia"),
    ("imp_5", "关键", "essential"),
    ("no_notes", "没有符合条件的笔记。", "No notes match."),
    ("personal", "个人资料", "Personal"),
    ("profile", "个人档案", "Profile"),
    ("key", "键", "Key"),
    ("value", "值", "Value"),
    ("updated", "更新时间", "Updated"),
    ("nothing_yet", "还没有记录。", "Nothing recorded yet."),
    ("key_history", "历史值", "Values over time"),
    ("deleted", "（已删除）", "(deleted)"),
    ("entities", "实体", "Entities"),
    ("name", "名称", "Name"),
    ("status", "状态", "Status"),
    ("attributes", "属性", "Attributes"),
    ("events", "事件时间线", "Events"),
    (
        "time_range",
        "时间范围（如 last_week、2026-01..2026-03）",
        "Time range (last_week, 2026-01..2026-03, …)",
    ),
    ("graph", "知识图谱", "Graph"),
    ("graph_around", "以此为中心", "around"),
    ("graph_left_out", "个较远的实体未画出", "more not drawn"),
    ("zoom_in", "放大", "Zoom in"),
    ("zoom_out", "缩小", "Zoom out"),
    ("zoom_reset", "复位", "Reset"),
    ("observations", "观察", "Observations"),
    ("relations", "关系", "Relations"),
    ("relation", "关系", "Relation"),
    (
        "no_remote",
        "没有配置远端（engram remote add <包> <地址>）。",
        "No remote (engram remote add <pack> <url>).",
    ),
];

/// Escapes text for HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a path segment or query value.
pub(crate) fn url(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}

/// A whole page: the frame (language, navigation, switch) around `body`.
pub(crate) fn page(lang: Lang, title: &str, pack: Option<&str>, here: &str, body: &str) -> String {
    let mut nav = format!(
        "<a href=\"/\">{}</a> · <a href=\"/notes\">{}</a> · <a href=\"/personal\">{}</a> · <a href=\"/graph\">{}</a> · <a href=\"/sync\">{}</a>",
        lang.t("packs"),
        lang.t("notes"),
        lang.t("personal"),
        lang.t("graph"),
        lang.t("sync")
    );
    if let Some(p) = pack {
        let u = url(p);
        nav.push_str(&format!(
            " › <a href=\"/p/{u}\">{}</a> · <a href=\"/p/{u}/memory\">{}</a> · <a href=\"/p/{u}/history\">{}</a> · <a href=\"/p/{u}/activity\">{}</a>",
            esc(p),
            lang.t("memories"),
            lang.t("history"),
            lang.t("activity")
        ));
    }
    let sep = if here.contains('?') { '&' } else { '?' };
    let other = match lang {
        Lang::Zh => format!("<a href=\"{}{sep}lang=en\" hreflang=\"en\" lang=\"en\">English</a>", esc(here)),
        Lang::En => format!("<a href=\"{}{sep}lang=zh\" hreflang=\"zh\" lang=\"zh-CN\">中文</a>", esc(here)),
    };
    format!(
        "<!doctype html>\n<html lang=\"{code}\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{title} · engram</title><link rel=\"stylesheet\" href=\"/assets/app.css\">\
<script src=\"/assets/app.js\" defer></script></head>\n<body>\
<header><nav aria-label=\"{navl}\"><strong>engram</strong> {nav}</nav>\
<span class=\"lang\" aria-label=\"{langl}\">{other}</span></header>\n<main id=\"main\">\n{body}\n</main></body></html>\n",
        code = lang.code(),
        title = esc(title),
        navl = lang.t("main_nav"),
        langl = lang.t("language"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(esc("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(esc("a\"b'c&"), "a&quot;b&#39;c&amp;");
    }

    #[test]
    fn language_follows_query_cookie_then_browser() {
        let mut h = HeaderMap::new();
        assert_eq!(Lang::choose(None, &h), Lang::En);
        h.insert(axum::http::header::ACCEPT_LANGUAGE, "fr;q=1, zh-CN;q=0.9, en;q=0.5".parse().unwrap());
        assert_eq!(Lang::choose(None, &h), Lang::Zh);
        h.insert(axum::http::header::COOKIE, "engram_ui_lang=en".parse().unwrap());
        assert_eq!(Lang::choose(None, &h), Lang::En);
        assert_eq!(Lang::choose(Some("zh"), &h), Lang::Zh);
    }

    #[test]
    fn every_text_has_both_languages() {
        for (k, z, e) in TEXTS {
            assert!(!z.is_empty() && !e.is_empty(), "{k}");
        }
    }
}
