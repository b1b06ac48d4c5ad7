//! The `engram-system-prompt` prompt.

use crate::ops::Engram;

impl Engram {
    /// The system prompt: the available packs and the rules for using the tools.
    pub fn system_prompt(&self) -> String {
        let packs = self.packs().list();
        if packs.is_empty() {
            return "# Engram 记忆印记\n\n暂无可用记忆印记。请使用 install_engram 工具安装专家记忆包。"
                .into();
        }
        let mut s = String::from(
            "# Engram 记忆印记\n\n你可以使用下列记忆印记（Engram）：每个印记是一个专家记忆包，包含角色、工作流程、规则、知识、案例与动态记忆。遇到相关问题时先加载对应印记，再按需阅读细节，并把值得长期记住的信息记录下来。\n\n## 可用记忆印记\n\n<engrams>\n",
        );
        for p in &packs {
            let desc = crate::pack::python_str(p.meta.get("description"), "");
            s.push_str(&format!(
                "  <engram>\n    <name>{}</name>\n    <description>{desc}</description>\n  </engram>\n",
                p.name
            ));
        }
        s.push_str("</engrams>\n\n## 使用规则\n\n");
        let rules = [
            "不确定有哪些印记时调用 list_engrams；问题与某个印记相关时，先调用 load_engram(name, query) 加载它的角色、规则、知识索引与动态记忆。",
            "加载后先看知识索引与案例索引里的摘要；需要全文时再调用 read_engram_file(name, path)，不要一次读取所有文件。",
            "用户透露了值得长期记住的信息（偏好、事实、决定、经历）时，调用 capture_memory(name, content, category, summary, memory_type, tags)。summary 写成一行可检索的摘要。",
            "memory_type 取 preference / fact / decision / history / general / inferred / stated 之一；推测得到的信息用 inferred，并尽量给出 expires（YYYY-MM-DD），到期后会自动移入 {category}-expired.md。",
            "与具体印记无关、所有印记都应知道的用户信息，用 capture_memory 的 is_global=true 记录到全局记忆。",
            "发现已记录的信息有误时用 correct_memory 修正；用户要求忘记时用 delete_memory 删除。两者都按摘要精确匹配唯一一条记忆，匹配不唯一时会列出候选。",
            "加载结果提示某类记忆超过 30 条时，调用 consolidate_memory 把该 category 压缩成一条综合记忆，原始条目会归档到 -archive.md。",
            "加载结果出现“## 首次引导”时，在对话中自然地了解其中列出的信息并用 capture_memory 记录，不要一次性盘问。",
            "加载结果出现“## 继承知识索引（来自 X）”时，其中的知识文件属于父印记 X，用 read_engram_file(X, path) 读取。",
            "需要沉淀新的知识文档时调用 add_knowledge(name, filename, content, summary)，它会同时更新知识索引。",
            "每次写入都是印记 git 仓库中的一次提交：用户可以在 git log 中审阅，也可以撤销；不要把密码、密钥等机密写入记忆。",
            "没有合适的印记时，可用 install_engram 安装（URL、本地路径或 registry 名称）。",
        ];
        for (i, r) in rules.iter().enumerate() {
            s.push_str(&format!("{}. {r}\n", i + 1));
        }
        s
    }
}
