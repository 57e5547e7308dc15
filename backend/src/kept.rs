//! What the services keep between calls — caches, limiters, the audit signer — each of a service's own type,
//! built by that service the first time it is asked for. The state holds this shelf and knows none of the types,
//! so the services stand above the state and not beside it.
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

#[derive(Default)]
pub struct Kept(RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Kept {
    /// The one `T` of this state, built by `init` on the first call.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let id = TypeId::of::<T>();
        let found = self.0.read().unwrap_or_else(PoisonError::into_inner).get(&id).cloned();
        let any = match found {
            Some(any) => any,
            None => {
                let mut shelf = self.0.write().unwrap_or_else(PoisonError::into_inner);
                shelf.entry(id).or_insert_with(|| Arc::new(init())).clone()
            }
        };
        any.downcast().unwrap_or_else(|_| unreachable!("each entry is kept under its own type"))
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn each_type_is_built_once_and_shared() {
        let kept = Kept::default();
        let built = AtomicUsize::new(0);
        let first = kept.get_or_init(|| {
            built.fetch_add(1, Ordering::SeqCst);
            AtomicUsize::new(7)
        });
        first.fetch_add(1, Ordering::SeqCst);
        let again = kept.get_or_init(|| {
            built.fetch_add(1, Ordering::SeqCst);
            AtomicUsize::new(0)
        });
        assert_eq!(again.load(Ordering::SeqCst), 8, "the same value, not a new one");
        assert_eq!(built.load(Ordering::SeqCst), 1);
        assert_eq!(*kept.get_or_init(|| String::from("other type")), "other type");
    }
}
