//! Xenomai latency's three histograms ("min", "avg" and "max" of `-h`), as
//! the timer test fills them and the report stores them; the classic HSH/HSS
//! lines and the gnuplot dump that print them are in `report::classic_xenomai`.

use serde::{Deserialize, Serialize, Serializer};

use crate::units::values::MAX_CELLS;

/// Why a histogram cannot be built, merged or read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XenomaiHistogramError {
    #[error("the histogram needs at least one cell (-H must be at least 1)")]
    NoCells,
    #[error("{0} histogram cells are too many (-H at most {MAX_CELLS})")]
    TooManyCells(usize),
    #[error("the histogram cells must be at least 1 ns wide (-B must be at least 1)")]
    ZeroBucket,
    #[error("histogram cell {index} is outside its {cells} cells")]
    CellOutOfRange { index: usize, cells: usize },
    #[error("histogram cell {0} is listed twice")]
    DuplicateCell(usize),
    #[error(
        "cannot merge a histogram of {other_cells} cells of {other_bucket_ns} ns \
         into one of {cells} cells of {bucket_ns} ns"
    )]
    LayoutMismatch {
        cells: usize,
        bucket_ns: u64,
        other_cells: usize,
        other_bucket_ns: u64,
    },
}

/// One of the original's three histograms ("min", "avg" or "max"): `cells`
/// cells of `bucket_ns` ns. A latency `dt` counts in cell `|dt| / bucket_ns`,
/// and everything at or beyond the last cell counts in the last cell.
///
/// All cells are allocated in [`XenomaiHistogram::new`]; [`add`] never
/// allocates. It serializes sparsely, only the non-empty cells:
/// `{"bucket_ns":1000,"cells":300,"counts":[[2,49391],[3,437]]}`, and reading
/// it back checks every cell index.
///
/// [`add`]: XenomaiHistogram::add
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SparseHistogram")]
pub struct XenomaiHistogram {
    bucket_ns: u64,
    /// Never empty, at most `MAX_CELLS` long.
    counts: Vec<u64>,
}

/// The serialized form of a [`XenomaiHistogram`]: its non-empty cells as
/// `[index, count]` pairs, in index order.
#[derive(Serialize, Deserialize)]
struct SparseHistogram {
    bucket_ns: u64,
    cells: usize,
    counts: Vec<(usize, u64)>,
}

impl Serialize for XenomaiHistogram {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SparseHistogram {
            bucket_ns: self.bucket_ns,
            cells: self.counts.len(),
            counts: self.non_empty().collect(),
        }
        .serialize(serializer)
    }
}

impl TryFrom<SparseHistogram> for XenomaiHistogram {
    type Error = XenomaiHistogramError;

    fn try_from(sparse: SparseHistogram) -> Result<Self, Self::Error> {
        let mut histogram = XenomaiHistogram::new(sparse.cells, sparse.bucket_ns)?;
        let mut cells = sparse.counts;
        cells.sort_unstable_by_key(|&(index, _)| index);
        if let Some(pair) = cells.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(XenomaiHistogramError::DuplicateCell(pair[0].0));
        }
        for (index, count) in cells {
            let cell =
                histogram
                    .counts
                    .get_mut(index)
                    .ok_or(XenomaiHistogramError::CellOutOfRange {
                        index,
                        cells: sparse.cells,
                    })?;
            *cell = count;
        }
        Ok(histogram)
    }
}

impl XenomaiHistogram {
    /// An empty histogram of `cells` cells of `bucket_ns` ns; both must be at
    /// least 1, and `cells` at most [`MAX_CELLS`].
    pub fn new(cells: usize, bucket_ns: u64) -> Result<Self, XenomaiHistogramError> {
        if cells == 0 {
            return Err(XenomaiHistogramError::NoCells);
        }
        if cells > MAX_CELLS {
            return Err(XenomaiHistogramError::TooManyCells(cells));
        }
        if bucket_ns == 0 {
            return Err(XenomaiHistogramError::ZeroBucket);
        }
        Ok(XenomaiHistogram {
            bucket_ns,
            counts: vec![0; cells],
        })
    }

    /// Counts one latency of `dt_ns` ns (negative ones by their magnitude).
    pub fn add(&mut self, dt_ns: i64) {
        let last = self.counts.len().saturating_sub(1);
        let cell = dt_ns.unsigned_abs() / self.bucket_ns.max(1);
        let index = usize::try_from(cell).map_or(last, |cell| cell.min(last));
        if let Some(count) = self.counts.get_mut(index) {
            *count = count.saturating_add(1);
        }
    }

    /// Adds `other`'s counts, cell by cell; both must have the same cells.
    pub fn merge(&mut self, other: &Self) -> Result<(), XenomaiHistogramError> {
        if self.bucket_ns != other.bucket_ns || self.counts.len() != other.counts.len() {
            return Err(XenomaiHistogramError::LayoutMismatch {
                cells: self.counts.len(),
                bucket_ns: self.bucket_ns,
                other_cells: other.counts.len(),
                other_bucket_ns: other.bucket_ns,
            });
        }
        for (count, add) in self.counts.iter_mut().zip(&other.counts) {
            *count = count.saturating_add(*add);
        }
        Ok(())
    }

    /// The number of latencies counted (saturating at `u64::MAX`).
    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .fold(0u64, |sum, &c| sum.saturating_add(c))
    }

    /// The count of cell `cell`; 0 for a cell beyond the last.
    pub fn count(&self, cell: usize) -> u64 {
        self.counts.get(cell).copied().unwrap_or(0)
    }

    /// The number of cells (`-H`).
    pub fn cells(&self) -> usize {
        self.counts.len()
    }

    /// The width of a cell in nanoseconds (`-B`).
    pub fn bucket_ns(&self) -> u64 {
        self.bucket_ns
    }

    /// The non-empty cells as `(index, count)`, in index order.
    pub fn non_empty(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count != 0)
            .map(|(index, &count)| (index, count))
    }

    /// The HSS figures, in cell units: total count, the mean cell index and the
    /// unbiased standard deviation of the cell index (0 for fewer than two
    /// counts). Summed in the original's order so the rounding is the same.
    /// The mean of an empty histogram is 0 (the original divides by zero).
    pub fn stats(&self) -> (u64, f64, f64) {
        let total = self.total();
        let mut sum = 0.0;
        for (index, count) in self.non_empty() {
            sum += (index as u128 * count as u128) as f64;
        }
        let avg = if total == 0 { 0.0 } else { sum / total as f64 };
        let mut variance = 0.0;
        for (index, count) in self.non_empty() {
            let deviation = index as f64 - avg;
            variance += count as f64 * deviation * deviation;
        }
        let stddev = if total > 1 {
            (variance / (total - 1) as f64).sqrt()
        } else {
            0.0
        };
        (total, avg, stddev)
    }
}
