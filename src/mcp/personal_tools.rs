//! The `personal` toolset: profile, entities and events of one user
//! (`--user` / `ENGRAM_USER`), stored in the graph pack.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{EngramServer, Structured};
use crate::ops::{Caller, EngramError, Personal};

/// `update_profile`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateProfileParams {
    /// Profile key, e.g. `name`, `city`, `favorite_food`, `起床时间`.
    pub key: String,
    /// The value: any JSON (a string, a number, a list, an object).
    pub value: Value,
    /// basic_info, preferences or habits (default: the key's current category, else basic_info).
    #[serde(default)]
    pub category: Option<String>,
}

/// `query_profile`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryProfileParams {
    /// Keys to return (all keys when omitted).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Only this category: basic_info, preferences or habits.
    #[serde(default)]
    pub category: Option<String>,
}

/// A profile key.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProfileKeyParams {
    /// Profile key.
    pub key: String,
}

/// `profile_history`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProfileHistoryParams {
    /// Profile key.
    pub key: String,
    /// Most versions to return, newest first (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `create_entity`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateEntityParams {
    /// pet, property, vehicle, person, or any other type.
    pub entity_type: String,
    /// Name (the knowledge-graph name; default: the type and the new id).
    #[serde(default)]
    pub name: Option<String>,
    /// Structured attributes, e.g. {"species": "dog", "breed": "柴犬"}.
    #[serde(default)]
    pub attributes: Option<Map<String, Value>>,
}

/// `update_entity`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateEntityParams {
    /// The entity's id (from create_entity or list_entities).
    pub entity_id: String,
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// Attributes to merge; a key set to null is removed.
    #[serde(default)]
    pub attributes: Option<Map<String, Value>>,
    /// active or inactive.
    #[serde(default)]
    pub status: Option<String>,
}

/// `list_entities`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListEntitiesParams {
    /// Only this type.
    #[serde(default)]
    pub entity_type: Option<String>,
    /// active (default), inactive or all.
    #[serde(default)]
    pub status: Option<String>,
}

/// An entity id.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EntityIdParams {
    /// The entity's id.
    pub entity_id: String,
}

/// `add_event`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddEventParams {
    /// purchase, illness, maintenance, activity, milestone or other.
    pub event_type: String,
    /// What happened, in the user's words.
    pub description: String,
    /// Ids of related entities (or exact names of knowledge-graph entities, which get linked).
    #[serde(default)]
    pub related_entity_ids: Option<Vec<String>>,
    /// Structured details, e.g. {"cost": 2000, "currency": "CNY"} (see memory://event-templates).
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// When it happened, ISO 8601 (a date alone is that day); default now.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// 0..1, default 0.5.
    #[serde(default)]
    pub importance: Option<f64>,
}

/// `search_events`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchEventsParams {
    /// Text to find (case-insensitive) in the description, type, metadata and related entity names.
    #[serde(default)]
    pub query: Option<String>,
    /// Only this event type.
    #[serde(default)]
    pub event_type: Option<String>,
    /// last_week, last_month, last_year, YYYY, YYYY-MM, YYYY-MM-DD or START..END.
    #[serde(default)]
    pub time_range: Option<String>,
    /// Most events to return, newest first (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `query_entity_timeline`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TimelineParams {
    /// The entity's id.
    pub entity_id: String,
    /// Most events to return, newest first (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

impl EngramServer {
    async fn run_personal<F>(&self, tool: &str, peer: &Peer<RoleServer>, f: F) -> Result<String, String>
    where
        F: FnOnce(&Personal, &Caller) -> Result<String, EngramError> + Send + 'static,
    {
        let Some(structured): Option<Arc<Structured>> = self.structured.clone() else {
            return Err("the personal toolset is not configured".into());
        };
        self.call(tool.to_owned(), peer, move |c| f(&structured.personal, c)).await.map_err(|e| e.to_string())
    }
}

fn limit(n: Option<u32>, default: usize) -> usize {
    n.map_or(default, |n| n as usize)
}

#[tool_router(router = personal_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "Set a key of the user's profile (one git commit). Categories: basic_info, preferences, habits. Returns whether an earlier value was replaced and what it was; earlier values stay in the history (profile_history)."
    )]
    async fn update_profile(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<UpdateProfileParams>,
    ) -> Result<String, String> {
        self.run_personal("update_profile", &peer, move |s, c| {
            s.update_profile(&p.key, &p.value, p.category.as_deref(), c)
        })
        .await
    }

    #[tool(
        description = "Read the user's profile: the given keys (all when omitted), optionally only one category (basic_info, preferences, habits).",
        annotations(read_only_hint = true)
    )]
    async fn query_profile(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<QueryProfileParams>,
    ) -> Result<String, String> {
        self.run_personal("query_profile", &peer, move |s, _| {
            s.query_profile(p.keys.as_deref(), p.category.as_deref())
        })
        .await
    }

    #[tool(description = "Delete a key of the user's profile (one git commit; its history stays readable).")]
    async fn delete_profile(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ProfileKeyParams>,
    ) -> Result<String, String> {
        self.run_personal("delete_profile", &peer, move |s, c| s.delete_profile(&p.key, c)).await
    }

    #[tool(
        description = "Show the past values of a profile key with their dates, newest first, from the git history.",
        annotations(read_only_hint = true)
    )]
    async fn profile_history(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ProfileHistoryParams>,
    ) -> Result<String, String> {
        self.run_personal("profile_history", &peer, move |s, _| s.profile_history(&p.key, limit(p.limit, 20)))
            .await
    }

    #[tool(
        description = "Create an entity of the user's life (pet, property, vehicle, person, or any type) with attributes; returns its id. The entity is also a knowledge-graph entity (search_nodes/open_nodes see its name, type and attributes)."
    )]
    async fn create_entity(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<CreateEntityParams>,
    ) -> Result<String, String> {
        self.run_personal("create_entity", &peer, move |s, c| {
            s.create_entity(&p.entity_type, p.name.as_deref(), p.attributes.as_ref(), c)
        })
        .await
    }

    #[tool(
        description = "Update an entity: rename it, merge attributes (a key set to null is removed), set status active/inactive."
    )]
    async fn update_entity(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<UpdateEntityParams>,
    ) -> Result<String, String> {
        self.run_personal("update_entity", &peer, move |s, c| {
            s.update_entity(&p.entity_id, p.name.as_deref(), p.attributes.as_ref(), p.status.as_deref(), c)
        })
        .await
    }

    #[tool(
        description = "List the user's entities, optionally of one type; status active (default), inactive or all.",
        annotations(read_only_hint = true)
    )]
    async fn list_entities(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ListEntitiesParams>,
    ) -> Result<String, String> {
        self.run_personal("list_entities", &peer, move |s, _| {
            s.list_entities(p.entity_type.as_deref(), p.status.as_deref().unwrap_or("active"))
        })
        .await
    }

    #[tool(
        description = "Delete an entity softly: its status becomes inactive; its events keep their links."
    )]
    async fn delete_entity(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<EntityIdParams>,
    ) -> Result<String, String> {
        self.run_personal("delete_entity", &peer, move |s, c| s.delete_entity(&p.entity_id, c)).await
    }

    #[tool(
        description = "Record an event of the user's life (one git commit); returns its id. event_type: purchase, illness, maintenance, activity, milestone, other. timestamp: ISO 8601, a date alone is that day (default now). See the resource memory://event-templates for usual metadata."
    )]
    async fn add_event(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<AddEventParams>,
    ) -> Result<String, String> {
        self.run_personal("add_event", &peer, move |s, c| {
            s.add_event(
                &p.event_type,
                &p.description,
                &p.related_entity_ids.unwrap_or_default(),
                p.metadata.as_ref(),
                p.timestamp.as_deref(),
                p.importance,
                c,
            )
        })
        .await
    }

    #[tool(
        description = "Search the user's events, newest first: text query, event_type, time_range (last_week, last_month, last_year, YYYY, YYYY-MM, YYYY-MM-DD, START..END), limit (default 20).",
        annotations(read_only_hint = true)
    )]
    async fn search_events(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<SearchEventsParams>,
    ) -> Result<String, String> {
        self.run_personal("search_events", &peer, move |s, _| {
            s.search_events(
                p.query.as_deref(),
                p.event_type.as_deref(),
                p.time_range.as_deref(),
                limit(p.limit, 20),
            )
        })
        .await
    }

    #[tool(
        description = "The events linked to an entity, newest first (limit default 10).",
        annotations(read_only_hint = true)
    )]
    async fn query_entity_timeline(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<TimelineParams>,
    ) -> Result<String, String> {
        self.run_personal("query_entity_timeline", &peer, move |s, _| {
            s.query_entity_timeline(&p.entity_id, limit(p.limit, 10))
        })
        .await
    }
}
