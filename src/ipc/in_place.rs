//! A C synchronisation object (`sem_t`, `pthread_mutex_t`) at a fixed
//! address in its own `MAP_SHARED` mapping: it never moves (glibc keeps
//! futex words inside it), a forked child sees the same object, and there
//! is no name that a killed run could leave behind. glibc and the kernel
//! update it behind Rust's back, through the C calls only.

use crate::rt::shm::SharedBox;
use std::cell::UnsafeCell;

/// The object's storage: written only by the C calls made for concurrent use.
struct Cell<T>(UnsafeCell<T>);

// SAFETY: the object is made to be used concurrently through its C calls
// (sem_*, pthread_mutex_*), which are the only way it is accessed.
unsafe impl<T> Sync for Cell<T> {}

/// A C object in place, zeroed until its own init call sets it up.
pub struct InPlace<T> {
    cell: SharedBox<Cell<T>>,
}

impl<T> InPlace<T> {
    /// All-zero storage for one `T` in its final place.
    ///
    /// # Safety
    /// All-zero bytes are a valid `T` (a plain C struct): only storage,
    /// until the caller's init call (`sem_init`, `pthread_mutex_init`).
    pub unsafe fn zeroed() -> Result<InPlace<T>, String> {
        // SAFETY: the caller's promise.
        let value = unsafe { std::mem::zeroed() };
        Ok(InPlace {
            cell: SharedBox::new(Cell(UnsafeCell::new(value)))?,
        })
    }

    /// The object's address, for its C calls.
    pub fn ptr(&self) -> *mut T {
        self.cell.0.get()
    }
}
