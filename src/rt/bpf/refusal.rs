//! A program the kernel's verifier refused, kept where its user can read
//! why: the verifier's whole log and the program's listing (`text.rs`,
//! numbered as the log numbers instructions) side by side in one new file
//! of the temporary directory, with an unpredictable name created
//! exclusively (`rt::outfile::create_unpredictable`: a file or link planted
//! in advance is never written through).

use super::insn::Code;
use std::io::{self, Write};
use std::path::PathBuf;

/// Writes the refusal of `latscope_<program>` (attached as `way`) and
/// returns the file's path.
pub fn save(program: &str, way: &str, log: &str, code: &Code) -> io::Result<PathBuf> {
    save_in(&std::env::temp_dir(), program, way, log, code)
}

fn save_in(
    dir: &std::path::Path,
    program: &str,
    way: &str,
    log: &str,
    code: &Code,
) -> io::Result<PathBuf> {
    let prefix = format!("latscope-verifier-{program}-");
    let (mut file, path) = crate::rt::outfile::create_unpredictable(dir, &prefix, ".txt", 0o644)?;
    let written = write!(file, "{}", report(program, way, log, code)).and_then(|()| file.flush());
    if let Err(e) = written {
        // A partial file would mislead whoever opens it.
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok(path)
}

/// The one line naming the file (or why it could not be written).
pub fn saved_line(saved: &io::Result<PathBuf>) -> String {
    match saved {
        Ok(path) => format!("verifier log and listing in {}", path.display()),
        Err(e) => format!(
            "the verifier log could not be written to {}: {}",
            std::env::temp_dir().display(),
            crate::rt::os_error_text(e)
        ),
    }
}

/// The file's text: the listing, then the whole log.
fn report(program: &str, way: &str, log: &str, code: &Code) -> String {
    let mut text = format!(
        "The kernel's verifier refused latscope_{program} ({way}).\n\
         The listing is the program latscope loaded, numbered as the log numbers\n\
         instructions; the verifier's whole log follows it.\n\n\
         == listing: latscope_{program}, {} instructions ==\n{code}\n\
         == verifier log ==\n{log}",
        code.len()
    );
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::insn::{Alu, Insn, Reg};
    use super::*;

    #[test]
    fn the_log_and_the_listing_are_saved_in_one_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let code = Code::from(vec![Insn::alu64_imm(Alu::Add, Reg::R0, 1), Insn::exit()]);
        let log = "0: R1=ctx() R10=fp0\n0: (07) r0 += 1\nR0 !read_ok\nprocessed 1 insns\n";
        let first = save_in(dir.path(), "unit", "tracepoint", log, &code).unwrap();
        let second = save_in(dir.path(), "unit", "tracepoint", log, &code).unwrap();
        assert_ne!(first, second, "every refusal gets its own file");
        let name = first.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("latscope-verifier-unit-") && name.ends_with(".txt"));
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(text.starts_with("The kernel's verifier refused latscope_unit (tracepoint)."));
        assert!(
            text.contains("   0: (07) r0 += 1\n   1: (95) exit\n"),
            "{text}"
        );
        assert!(text.ends_with(log), "the whole log: {text}");
        assert_eq!(
            saved_line(&Ok(first.clone())),
            format!("verifier log and listing in {}", first.display())
        );
    }

    #[test]
    fn an_unwritable_directory_is_an_error_not_a_file_elsewhere() {
        let err = save_in(
            std::path::Path::new("/nonexistent/dir"),
            "unit",
            "tracepoint",
            "",
            &Code::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
