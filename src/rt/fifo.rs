//! A named pipe this process creates and removes (cyclictest's `-F`), and
//! the thread that hands each reader who opens it the text of that moment.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// A named pipe made here (never an existing file: `mkfifo` fails with
/// EEXIST on any existing name, so nothing is replaced), removed on drop.
pub struct OwnFifo {
    path: PathBuf,
}

impl OwnFifo {
    /// `mkfifo(path, 0666)`; a path with a NUL byte is EINVAL.
    pub fn create(path: &str) -> std::io::Result<OwnFifo> {
        let c_path = std::ffi::CString::new(path)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: NUL-terminated path.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o666) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnFifo {
            path: PathBuf::from(path),
        })
    }

    /// The thread that writes `text()` to every reader until `stopped()`,
    /// then removes the pipe. Without a reader it looks again every 0.5 s
    /// (cyclictest's retry), and for `stopped` every 50 ms in between.
    pub fn serve(
        self,
        stopped: impl Fn() -> bool + Send + 'static,
        text: impl Fn() -> String + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            while !stopped() {
                let opened = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&self.path);
                match opened {
                    Ok(mut f) => {
                        let _ = f.write_all(text().as_bytes());
                        std::thread::sleep(Duration::from_micros(250));
                    }
                    Err(_) => {
                        for _ in 0..10 {
                            if stopped() {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            }
            drop(self);
        })
    }
}

impl Drop for OwnFifo {
    fn drop(&mut self) {
        // Only the pipe this process created (mkfifo succeeded).
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_reader_gets_the_text_and_the_pipe_is_gone_after_the_stop() {
        let dir = std::env::temp_dir().join(format!("latscope-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let path = dir.to_str().unwrap().to_string();
        let fifo = OwnFifo::create(&path).unwrap();
        assert!(
            OwnFifo::create(&path).is_err(),
            "an existing name is refused"
        );
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = Arc::clone(&stop);
        let server = fifo.serve(
            move || stop_t.load(Ordering::Relaxed),
            || "T: 0\n".to_string(),
        );
        let mut text = String::new();
        std::fs::File::open(&dir)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        // The server may open the pipe again before this reader sees the
        // end: then the same text once more.
        assert!(
            !text.is_empty() && text.len().is_multiple_of(5) && text.lines().all(|l| l == "T: 0"),
            "{text:?}"
        );
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap();
        assert!(!dir.exists());
    }
}
