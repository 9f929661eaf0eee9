//! The request log shared by the test doubles.

use crate::types::ChatRequest;
use std::sync::{Arc, Mutex, MutexGuard};

/// Every request a double received, in order. Clones share the log.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestLog {
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl RequestLog {
    fn lock(&self) -> MutexGuard<'_, Vec<ChatRequest>> {
        // A panicking test thread must not hide the log from the others.
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request and returns its 1-based call number.
    pub(crate) fn record(&self, request: &ChatRequest) -> usize {
        let mut requests = self.lock();
        requests.push(request.clone());
        requests.len()
    }

    pub(crate) fn requests(&self) -> Vec<ChatRequest> {
        self.lock().clone()
    }

    pub(crate) fn last(&self) -> Option<ChatRequest> {
        self.lock().last().cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

/// A deterministic token estimate: about four characters per token, at least one.
pub(crate) fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}
