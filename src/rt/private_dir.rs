//! A new directory only this process made: `mkdtemp(3)` (a fresh name from
//! the template's trailing `XXXXXX`, mode 0700, never an existing one).

use std::path::{Path, PathBuf};

/// Makes the directory `template` names, its last six `X`s replaced by a
/// fresh suffix; the path made.
pub fn make(template: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut bytes = template.as_os_str().as_bytes().to_vec();
    bytes.push(0);
    // SAFETY: a NUL-terminated, writable template.
    if unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) }.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    bytes.pop();
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_call_makes_a_new_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let template = base.path().join("d-XXXXXX");
        let (a, b) = (
            super::make(&template).unwrap(),
            super::make(&template).unwrap(),
        );
        assert_ne!(a, b);
        let mode = std::fs::metadata(&a).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(super::make(&base.path().join("none/d-XXXXXX")).is_err());
    }
}
