//! The flows registered with `POST /sim/flows` (`crate::flows` serves and checks them).

use std::sync::RwLock;

/// One registered flow.
#[derive(Debug, Clone, PartialEq)]
pub struct SimFlow {
    pub id: String,
    pub name: String,
    /// DRAFT, PUBLISHED, DEPRECATED, BLOCKED or THROTTLED.
    pub status: String,
    pub categories: Vec<String>,
}

/// The registered flows (every account of the sim sees them).
#[derive(Debug, Default)]
pub struct Flows(RwLock<Vec<SimFlow>>);

impl Flows {
    pub(crate) fn register(&self, flow: SimFlow) {
        let mut all = self.0.write().unwrap_or_else(|p| p.into_inner());
        all.retain(|f| f.id != flow.id);
        all.push(flow);
    }

    pub(crate) fn all(&self) -> Vec<SimFlow> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The flow a send names by id or by name.
    pub(crate) fn find(&self, id: Option<&str>, name: Option<&str>) -> Option<SimFlow> {
        self.all()
            .into_iter()
            .find(|f| id.is_some_and(|i| f.id == i) || name.is_some_and(|n| f.name == n))
    }
}
