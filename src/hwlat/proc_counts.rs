//! The unprivileged tier's interference evidence: one CPU's column of
//! `/proc/interrupts` (IRQ lines, NMI, LOC, IPIs...) and `/proc/softirqs`,
//! read between sub-windows into buffers allocated before the run.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// One per-CPU table (`/proc/interrupts` or `/proc/softirqs`): its rows'
/// names, and the CPU's column as last read.
#[derive(Debug, Clone, Default)]
pub struct Column {
    /// Row names as people know them: `LOC`, `NMI`, `24 (virtio0-input.0)`.
    pub names: Vec<String>,
    pub values: Vec<u64>,
}

/// Where `CPU<cpu>` is among the header's columns.
fn column_index(header: &str, cpu: usize) -> Option<usize> {
    let wanted = format!("CPU{cpu}");
    header.split_whitespace().position(|c| c == wanted)
}

/// A row's name: the label (`LOC`, `TIMER`), or for a numbered IRQ line its
/// number and device (the last word after the counts), `24 (virtio0-input.0)`.
fn row_name(label: &str, rest: &[&str], columns: usize) -> String {
    if label.chars().all(|c| c.is_ascii_digit()) {
        match rest.get(columns..).and_then(|words| words.last()) {
            Some(device) => format!("{label} ({device})"),
            None => label.to_string(),
        }
    } else {
        label.to_string()
    }
}

impl Column {
    /// Parses `text` (a whole table) for `cpu`: names and values. None when
    /// the table has no column for `cpu`.
    pub fn parse(text: &str, cpu: usize) -> Option<Column> {
        let mut lines = text.lines();
        let header = lines.next()?;
        let index = column_index(header, cpu)?;
        let columns = header.split_whitespace().count();
        let mut out = Column::default();
        for line in lines {
            let mut words = line.split_whitespace();
            let Some(label) = words.next().and_then(|l| l.strip_suffix(':')) else {
                continue;
            };
            let rest: Vec<&str> = words.collect();
            // ERR and MIS have one count for the machine, not one per CPU.
            let Some(value) = rest.get(index).and_then(|v| v.parse::<u64>().ok()) else {
                continue;
            };
            out.names.push(row_name(label, &rest, columns));
            out.values.push(value);
        }
        Some(out)
    }

    /// Re-reads only the values, in place (no allocation): false when the
    /// table's rows changed (an IRQ line came or went), then `parse` again.
    pub fn update(&mut self, text: &str, cpu: usize) -> bool {
        let Some(index) = text.lines().next().and_then(|h| column_index(h, cpu)) else {
            return false;
        };
        let mut row = 0;
        for line in text.lines().skip(1) {
            let mut words = line.split_whitespace();
            if words.next().and_then(|l| l.strip_suffix(':')).is_none() {
                continue;
            }
            let Some(value) = words.nth(index).and_then(|v| v.parse::<u64>().ok()) else {
                continue;
            };
            match self.values.get_mut(row) {
                Some(slot) => *slot = value,
                None => return false,
            }
            row += 1;
        }
        row == self.values.len()
    }

    /// Rows whose count grew from `earlier` to `self` (same rows): index
    /// and how many events.
    pub fn moved_since<'a>(
        &'a self,
        earlier: &'a [u64],
    ) -> impl Iterator<Item = (usize, u64)> + 'a {
        self.values
            .iter()
            .zip(earlier)
            .enumerate()
            .filter(|(_, (now, was))| now > was)
            .map(|(i, (now, was))| (i, now - was))
    }
}

/// A proc table read with pread into a buffer allocated once.
pub struct Table {
    file: File,
    buffer: Vec<u8>,
}

/// Room for a proc table: /proc/interrupts of a large machine is tens of KiB.
const TABLE_BYTES: usize = 256 * 1024;

impl Table {
    pub fn open(path: &str) -> std::io::Result<Table> {
        Ok(Table {
            file: File::open(path)?,
            buffer: vec![0; TABLE_BYTES],
        })
    }

    /// The whole table as it is now (the kernel regenerates it per read).
    pub fn read(&mut self) -> std::io::Result<&str> {
        let mut len = 0;
        while len < self.buffer.len() {
            let n = self.file.read_at(&mut self.buffer[len..], len as u64)?;
            if n == 0 {
                break;
            }
            len += n;
        }
        std::str::from_utf8(&self.buffer[..len])
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

/// The calling thread's context switches (voluntary + involuntary): a task
/// that ran on its CPU meanwhile, seen without privilege.
pub fn thread_switches() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return 0;
    }
    (usage.ru_nvcsw as u64).saturating_add(usage.ru_nivcsw as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
  0:         44          0   IO-APIC   2-edge      timer\n\
 24:          0        812   PCI-MSIX-0000:00:03.0   0-edge      virtio0-input.0\n\
NMI:          0          3   Non-maskable interrupts\n\
LOC:     123456     654321   Local timer interrupts\n\
ERR:          0\n\
MIS:          0\n";

    #[test]
    fn a_cpus_column_is_read_with_names_that_say_which_line() {
        let c = Column::parse(INTERRUPTS, 1).unwrap();
        assert_eq!(c.names, ["0 (timer)", "24 (virtio0-input.0)", "NMI", "LOC"]);
        assert_eq!(c.values, [0, 812, 3, 654321]);
        assert!(Column::parse(INTERRUPTS, 2).is_none());
    }

    #[test]
    fn an_update_reads_values_in_place_and_names_what_moved() {
        let mut c = Column::parse(INTERRUPTS, 1).unwrap();
        let before = c.values.clone();
        let later = INTERRUPTS
            .replace("654321", "654325")
            .replace("        812", "        813");
        assert!(c.update(&later, 1));
        let moved: Vec<(usize, u64)> = c.moved_since(&before).collect();
        assert_eq!(moved, [(1, 1), (3, 4)]);
        // A new IRQ line: the rows changed, the caller parses again.
        let grown = format!("{INTERRUPTS} 25:          1          1   PCI   x      eth1\n");
        assert!(!c.update(&grown, 1));
    }

    #[test]
    fn softirqs_are_one_row_per_kind() {
        let text = "                    CPU0       CPU1       \n          HI:          0          1\n       TIMER:        100        200\n";
        let c = Column::parse(text, 0).unwrap();
        assert_eq!(c.names, ["HI", "TIMER"]);
        assert_eq!(c.values, [0, 100]);
    }
}
