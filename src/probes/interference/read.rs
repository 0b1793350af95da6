//! Reading one CPU's slot from user space, with plain loads of the mapped
//! map (`layout.rs`): the counter (one volatile load), the NMI totals, and
//! the causes of a gap, copied from the ring entry by entry, each checked
//! by its commit word.

use super::layout::{Kind, RING_LAYOUT, RING_SLOTS, SLOT_SIZE, entry, header};
use crate::probes::ring::AreaView;

/// One cause as the ring held it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawCause {
    /// `layout::Kind` code.
    pub kind: u32,
    pub number: u32,
    pub prev_pid: u32,
    pub comm: [u8; 16],
    pub prev_comm: [u8; 16],
}

impl RawCause {
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_code(self.kind)
    }
}

/// The causes of one gap: the events counted across it, and those the ring
/// still held (the last `RING_SLOTS` at most), oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GapCauses {
    pub events: u64,
    pub kept: usize,
    pub causes: [RawCause; RING_SLOTS],
}

impl GapCauses {
    pub fn kept(&self) -> &[RawCause] {
        &self.causes[..self.kept]
    }
}

/// One CPU's slot in the mapping.
#[derive(Debug, Clone, Copy)]
pub struct SlotView {
    area: AreaView,
}

impl SlotView {
    /// The slot at `base`.
    ///
    /// # Safety
    /// `base` points at a whole slot (`layout::SLOT_SIZE` bytes, 8-aligned)
    /// that stays mapped while the view is used.
    pub unsafe fn new(base: *const u8) -> SlotView {
        // SAFETY: a whole slot that stays mapped (the caller's promise).
        let area = unsafe { AreaView::new(base, SLOT_SIZE) };
        SlotView { area }
    }

    fn u64_at(&self, offset: usize) -> u64 {
        self.area.u64_at(offset)
    }

    /// The counter's word: what the sampler loads once per read.
    pub fn count_ptr(&self) -> *const u64 {
        self.area.base().cast()
    }

    pub fn count(&self) -> u64 {
        self.u64_at(header::COUNT)
    }

    /// NMI handler runs and their time (ns).
    pub fn nmis(&self) -> (u64, u64) {
        (self.u64_at(header::NMIS), self.u64_at(header::NMI_NS))
    }

    /// Copies the causes of the events numbered `(from, to]` (counter
    /// values) the ring still holds into `out`, oldest first.
    pub fn causes(&self, from: u64, to: u64, out: &mut GapCauses) {
        out.events = to.saturating_sub(from);
        out.kept = 0;
        // The newest RING_SLOTS events at most, in order.
        let first = from.max(to.saturating_sub(RING_SLOTS as u64)) + 1;
        for seq in first..=to {
            let at = RING_LAYOUT.entry_offset(seq - 1);
            if self.u64_at(at + entry::SEQ) != seq {
                continue; // overwritten by a newer event, or being written
            }
            let cause = RawCause {
                kind: self.area.u32_at(at + entry::KIND),
                number: self.area.u32_at(at + entry::NUMBER),
                prev_pid: self.area.u32_at(at + entry::PREV_PID),
                comm: self.area.bytes(at + entry::COMM),
                prev_comm: self.area.bytes(at + entry::PREV_COMM),
            };
            // Whole only if its commit word did not change meanwhile.
            if self.u64_at(at + entry::SEQ) == seq {
                out.causes[out.kept] = cause;
                out.kept += 1;
            }
        }
    }
}
