//! The native comparator's connection pools.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A fixed set of connections; a request waits (asynchronously) for one.
pub struct Pool<T> {
    items: Mutex<Vec<T>>,
    available: Arc<Semaphore>,
}

pub struct Pooled<T: Send + 'static> {
    item: Option<T>,
    pool: Arc<Pool<T>>,
    _permit: OwnedSemaphorePermit,
}

impl<T: Send + 'static> Pool<T> {
    pub fn new(items: Vec<T>) -> Arc<Pool<T>> {
        let available = Arc::new(Semaphore::new(items.len()));
        Arc::new(Pool { items: Mutex::new(items), available })
    }

    pub async fn get(self: &Arc<Self>) -> Pooled<T> {
        let permit = self
            .available
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let item = self.items.lock().unwrap().pop();
        Pooled { item, pool: self.clone(), _permit: permit }
    }
}

impl<T: Send + 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        // Back in the pool before the permit (dropped after this) frees it.
        if let Some(item) = self.item.take() {
            self.pool.items.lock().unwrap().push(item);
        }
    }
}

impl<T: Send + 'static> std::ops::Deref for Pooled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item.as_ref().expect("a pooled item is present until dropped")
    }
}

impl<T: Send + 'static> std::ops::DerefMut for Pooled<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.item.as_mut().expect("a pooled item is present until dropped")
    }
}
