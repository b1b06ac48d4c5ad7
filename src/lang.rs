//! The language a person reads: Chinese or English.
//!
//! The MCP tools answer in the Python Engram server's Chinese texts whatever the locale, so the
//! language is chosen only at the edges a person reads: the CLI ([`crate::settings::lang`]), the web
//! page (`ui::html`, from the browser). Library code returns [`Said`] (both texts) or
//! structured values, and the edge picks one.

/// An interface language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// 中文 (the Python Engram server's language).
    Zh,
    /// English.
    En,
}

impl Lang {
    /// The BCP 47 code (`lang` attribute).
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh-CN",
            Lang::En => "en",
        }
    }

    /// `zh…` is Chinese, `en…` English (case-insensitive); anything else is no language.
    pub fn parse(value: &str) -> Option<Lang> {
        match value.trim().get(..2).map(str::to_ascii_lowercase).as_deref() {
            Some("zh") => Some(Lang::Zh),
            Some("en") => Some(Lang::En),
            _ => None,
        }
    }

    /// The CLI's language from environment variables read through `var`:
    /// `ENGRAM_LANG` (`zh` or `en`) wins; else the first of `LC_ALL`, `LC_MESSAGES`, `LANG`
    /// that is set and not empty (the POSIX order): `zh…` is Chinese, anything else
    /// (`en_US.UTF-8`, `C`, `POSIX`, `fr_FR`) English. No locale at all is English too.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Lang {
        if let Some(l) = var(crate::settings::ENV_LANG).as_deref().and_then(Lang::parse) {
            return l;
        }
        let locale =
            ["LC_ALL", "LC_MESSAGES", "LANG"].into_iter().filter_map(&var).find(|v| !v.trim().is_empty());
        match locale.as_deref().and_then(Lang::parse) {
            Some(Lang::Zh) => Lang::Zh,
            _ => Lang::En,
        }
    }

    /// `zh` or `en` as `text` says in this language.
    pub fn pick<'a>(self, zh: &'a str, en: &'a str) -> &'a str {
        match self {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }
}

/// A text in both languages. `Display` is the Chinese one: what the MCP tools answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The Chinese text (the Python Engram server's, where it has one).
    pub zh: String,
    /// The English text.
    pub en: String,
}

impl Said {
    /// Both texts.
    pub fn new(zh: impl Into<String>, en: impl Into<String>) -> Said {
        Said { zh: zh.into(), en: en.into() }
    }

    /// The text in `lang`.
    pub fn get(&self, lang: Lang) -> &str {
        lang.pick(&self.zh, &self.en)
    }
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.zh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Lang {
        Lang::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn engram_lang_wins_then_the_posix_order() {
        assert_eq!(from(&[]), Lang::En);
        assert_eq!(from(&[("LANG", "zh_CN.UTF-8")]), Lang::Zh);
        assert_eq!(from(&[("LANG", "zh_TW")]), Lang::Zh);
        assert_eq!(from(&[("LANG", "en_US.UTF-8")]), Lang::En);
        assert_eq!(from(&[("LANG", "C")]), Lang::En);
        assert_eq!(from(&[("LANG", "fr_FR.UTF-8")]), Lang::En);
        assert_eq!(from(&[("LANG", "zh_CN.UTF-8"), ("LC_ALL", "C")]), Lang::En);
        assert_eq!(from(&[("LANG", "en_US"), ("LC_MESSAGES", "zh_CN")]), Lang::Zh);
        assert_eq!(from(&[("LC_ALL", ""), ("LANG", "zh_CN")]), Lang::Zh);
        assert_eq!(from(&[("LANG", "en_US"), ("ENGRAM_LANG", "zh")]), Lang::Zh);
        assert_eq!(from(&[("LANG", "zh_CN"), ("ENGRAM_LANG", "en")]), Lang::En);
        // A value ENGRAM_LANG does not know leaves the choice to the locale.
        assert_eq!(from(&[("LANG", "zh_CN"), ("ENGRAM_LANG", "de")]), Lang::Zh);
    }

    #[test]
    fn said_shows_chinese_and_picks_either() {
        let s = Said::new("安装成功", "installed");
        assert_eq!(s.to_string(), "安装成功");
        assert_eq!(s.get(Lang::En), "installed");
        assert_eq!(s.get(Lang::Zh), "安装成功");
    }
}
