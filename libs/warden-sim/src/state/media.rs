//! The media the sim holds, by id, in memory (served by the media handlers, `crate::media`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// One stored media object.
pub struct Item {
    pub bytes: Bytes,
    pub mime_type: String,
    pub sha256: String,
    pub filename: Option<String>,
}

/// Media by id, in memory.
#[derive(Default)]
pub struct MediaStore {
    items: Mutex<HashMap<String, Arc<Item>>>,
    seq: AtomicU64,
}

impl MediaStore {
    /// Stores `bytes` and returns the new media id.
    pub fn put(&self, bytes: Bytes, mime_type: &str, filename: Option<String>) -> String {
        let id =
            (700_000_000_000_000u64 + self.seq.fetch_add(1, Ordering::Relaxed) + 1).to_string();
        let item = Item {
            sha256: warden_platform::media::sha256_hex(&bytes),
            bytes,
            mime_type: mime_type.to_owned(),
            filename,
        };
        self.lock().insert(id.clone(), Arc::new(item));
        id
    }

    pub fn get(&self, id: &str) -> Option<Arc<Item>> {
        self.lock().get(id).cloned()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Item>>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }
}
