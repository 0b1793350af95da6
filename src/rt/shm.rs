//! Memory shared with forked children: one value in an anonymous `MAP_SHARED`
//! mapping. Created before `fork()`, it is the same memory in parent and
//! child, and there is no name that could leak: the kernel frees it when the
//! last process that maps it is gone.

use std::ops::Deref;
use std::ptr::NonNull;

/// A `T` in its own shared anonymous mapping. The value never moves (kernel
/// objects such as `sem_t` and futex words must not), and is dropped and
/// unmapped when the box is dropped in the process that created it.
pub struct SharedBox<T> {
    ptr: NonNull<T>,
}

// SAFETY: the box owns its value like a `Box<T>` does; sharing it across
// threads is as safe as sharing `&T`.
unsafe impl<T: Send> Send for SharedBox<T> {}
unsafe impl<T: Sync> Sync for SharedBox<T> {}

impl<T> SharedBox<T> {
    pub fn new(value: T) -> Result<SharedBox<T>, String> {
        let size = std::mem::size_of::<T>().max(1);
        assert!(
            std::mem::align_of::<T>() <= 4096,
            "page alignment covers every value"
        );
        // SAFETY: anonymous mapping, no file; the result is checked.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(format!(
                "could not map shared memory: {}",
                std::io::Error::last_os_error()
            ));
        }
        let ptr = NonNull::new(raw.cast::<T>()).expect("mmap never returns null on success");
        // SAFETY: fresh, page-aligned, writable memory of at least size_of::<T>().
        unsafe { ptr.as_ptr().write(value) };
        Ok(SharedBox { ptr })
    }

    /// The address of the value (for kernel calls that take a pointer).
    pub fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

impl<T> Deref for SharedBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialized in `new`, valid until drop.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Drop for SharedBox<T> {
    fn drop(&mut self) {
        // SAFETY: the value was written in `new` and is dropped once; the
        // mapping has the size it was created with.
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr());
            libc::munmap(self.ptr.as_ptr().cast(), std::mem::size_of::<T>().max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_forked_child_writes_what_the_parent_reads() {
        let shared = SharedBox::new(AtomicU64::new(1)).unwrap();
        // SAFETY: the child only stores to the mapping and calls _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            shared.store(42, Ordering::SeqCst);
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(shared.load(Ordering::SeqCst), 42);
    }
}
