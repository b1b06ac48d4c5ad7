//! Documents and their searchable fields.

use serde::{Deserialize, Serialize};

/// A searchable document: a memory entry, a knowledge file, a note…
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Opaque unique key; upserting a document with the same id replaces it.
    pub id: String,
    /// A memory's summary, a file's heading or a note's title (weighted highest).
    #[serde(default)]
    pub title: String,
    /// The main text.
    #[serde(default)]
    pub body: String,
    /// Low-weight auxiliary text that helps recall but should not dominate
    /// (e.g. the neighbouring entries of a conversation, a speaker name, a date).
    /// It is searched but never used for snippets.
    #[serde(default)]
    pub context: String,
    /// The pack (engram) the document belongs to.
    #[serde(default)]
    pub pack: String,
    /// Document kind: `memory`, `knowledge`, `example`, `graph`, `profile`, `event`, `note`…
    #[serde(default)]
    pub kind: String,
    /// Memory category (e.g. `preferences`), if any.
    #[serde(default)]
    pub category: Option<String>,
    /// Memory type (e.g. `preference`, `fact`, `decision`), if any.
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Tags; used as filters and also searched as a low-weight field.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Time of the document in unix seconds, if known.
    #[serde(default)]
    pub time: Option<i64>,
    /// Path of the file the document comes from.
    #[serde(default)]
    pub path: String,
}

/// A searchable field of a [`Document`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    /// [`Document::title`].
    Title,
    /// [`Document::body`].
    Body,
    /// [`Document::tags`], joined, and [`Document::category`].
    Tags,
    /// [`Document::context`].
    Context,
    /// Date terms derived from [`Document::time`] (year, month, day).
    Time,
}

impl Field {
    /// Number of searchable fields.
    pub const COUNT: usize = 5;
    /// All fields, in index order.
    pub const ALL: [Field; Field::COUNT] = [
        Field::Title,
        Field::Body,
        Field::Tags,
        Field::Context,
        Field::Time,
    ];

    /// Position of the field in per-field arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The field's name as used in output (`title`, `body`, `tags`, `context`).
    pub fn name(self) -> &'static str {
        match self {
            Field::Title => "title",
            Field::Body => "body",
            Field::Tags => "tags",
            Field::Context => "context",
            Field::Time => "time",
        }
    }
}

impl Document {
    /// Convenience constructor for a document with an id, a title and a body.
    pub fn new(id: impl Into<String>, title: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            body: body.into(),
            ..Self::default()
        }
    }

    /// The text of one searchable field. Tags are joined with spaces, and the
    /// category is searched with them (a category named after a person or a
    /// topic is evidence too). A title the body contains word for word (a
    /// title cut from the text) is not indexed: it would only count the same
    /// words twice. The time field has no text (its terms come from
    /// [`Document::time`]).
    pub fn field_text(&self, field: Field) -> std::borrow::Cow<'_, str> {
        match field {
            Field::Title if title_repeats_body(&self.title, &self.body) => "".into(),
            Field::Title => self.title.as_str().into(),
            Field::Body => self.body.as_str().into(),
            Field::Tags => match &self.category {
                Some(c) if !c.is_empty() => {
                    let mut t = self.tags.join(" ");
                    t.push(' ');
                    t.push_str(c);
                    t.into()
                }
                _ => self.tags.join(" ").into(),
            },
            Field::Context => self.context.as_str().into(),
            Field::Time => "".into(),
        }
    }
}

/// Whether a title only repeats the start of the body (a title cut from the
/// text, as the notes toolset derives them): such a title adds no evidence.
fn title_repeats_body(title: &str, body: &str) -> bool {
    let t = title.trim().trim_end_matches('…').trim_end();
    !t.is_empty() && body.contains(t)
}
