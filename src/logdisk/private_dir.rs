//! The suite's private directory for its log-disk files.

/// A private directory for the suite's files on the filesystem of the
/// current directory (`mkdtemp`: a new name, mode 0700), removed on drop.
pub struct PrivateDir {
    pub path: std::path::PathBuf,
    /// Its name in the ownership registry, which holds it while it exists.
    registered: Option<String>,
}

impl PrivateDir {
    pub fn create() -> Result<PrivateDir, String> {
        let path = crate::rt::private_dir::make(std::path::Path::new("./.latscope-logdisk-XXXXXX"))
            .map_err(|e| {
                format!(
                    "cannot create a private directory in the current directory: {}",
                    crate::rt::os_error_text(&e)
                )
            })?;
        let registered = crate::rt::registry::absolute(&path)
            .and_then(|p| crate::rt::registry::path_identity(&p));
        if let Some(identity) = &registered {
            crate::rt::registry::record(crate::rt::registry::Kind::Dir, identity);
        }
        Ok(PrivateDir { path, registered })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
        if let Some(identity) = &self.registered {
            crate::rt::registry::forget(crate::rt::registry::Kind::Dir, &[identity]);
        }
    }
}
