//! Fitting a `Table` to a width (the terminal's, `crate::units::fit_columns`):
//! the one narrowing every console table goes through. A table names which
//! of its columns may wrap (long texts, wrapped onto continuation lines
//! under their column) and which may be left out, least important first;
//! wrapping goes first, down to `WRAP_MIN` columns, then columns are left
//! out until the table fits, and one line under it says what was narrowed
//! and names `--wide`.

/// How narrow a wrapped column may become: a word or two per line.
pub const WRAP_MIN: usize = 12;

/// The blanks between two columns.
pub const GAP: usize = 2;

/// What fitting did to a table: the columns it keeps, their widths, and
/// the headers of those it left out.
pub struct Fitted {
    pub columns: Vec<usize>,
    pub widths: Vec<usize>,
    pub left_out: Vec<usize>,
    pub wrapped: bool,
}

/// The columns of a table whose natural widths are `natural`, fitted to
/// `limit`: `wrap` may narrow to `WRAP_MIN` (the first keeping the most
/// room), `drop_order` may go, first first. Width is what fits or, when nothing more may give, the narrowest
/// the rules allow.
pub fn fit(natural: &[usize], wrap: &[usize], drop_order: &[usize], limit: usize) -> Fitted {
    let mut widths = natural.to_vec();
    let mut columns: Vec<usize> = (0..natural.len()).collect();
    let mut left_out = Vec::new();
    let total = |columns: &[usize], widths: &[usize]| {
        columns.iter().map(|&c| widths[c]).sum::<usize>() + GAP * columns.len().saturating_sub(1)
    };
    let mut wrapped = false;
    let mut drops = drop_order.iter();
    while total(&columns, &widths) > limit {
        // The n-th wrapping column keeps about 1/(n+1) of the first's room:
        // one column at a time off the one widest by that measure.
        let widest = wrap
            .iter()
            .enumerate()
            .filter(|(_, c)| columns.contains(c) && widths[**c] > WRAP_MIN)
            .max_by_key(|(rank, c)| widths[**c] * (rank + 1));
        if let Some((_, &c)) = widest {
            widths[c] -= 1;
            wrapped = true;
        } else if let Some(&c) = drops.next() {
            columns.retain(|&k| k != c);
            left_out.push(c);
        } else {
            break;
        }
    }
    Fitted {
        columns,
        widths,
        left_out,
        wrapped,
    }
}

/// `text` as lines of at most `width` characters, broken at blanks (a word
/// longer than the line is cut); at least one line.
pub fn wrap_cell(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        let used = line.chars().count();
        if used > 0 && used + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        while word.len() > width {
            let rest = word.split_off(width);
            lines.push(word.into_iter().collect());
            word = rest;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// The line under a narrowed table: what was left out or wrapped to fit
/// `limit` columns, and that `--wide` prints it whole.
pub fn narrowed_line(headers: &[&str], wrapped: bool, limit: usize) -> String {
    let line = if headers.is_empty() {
        format!("(wrapped to fit {limit} columns; --wide: one line a row)")
    } else {
        let wrapped = if wrapped { "wrapped, " } else { "" };
        let gone = headers.join(", ");
        // `--wide` first, so that the line still names it when it wraps.
        format!("(--wide shows all; {wrapped}left out to fit {limit} columns: {gone})")
    };
    crate::units::wrap_to(&line, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_that_fits_is_left_alone() {
        let f = fit(&[5, 5, 5], &[], &[2, 1], 19);
        assert_eq!(f.columns, vec![0, 1, 2]);
        assert!(f.left_out.is_empty() && !f.wrapped);
    }

    #[test]
    fn columns_go_in_their_order_until_the_table_fits() {
        // 6+2+6+2+6+2+6 = 30; leaving out column 3 then 1 gives 6+2+6+2... = 14.
        let f = fit(&[6, 6, 6, 6], &[], &[3, 1, 2], 14);
        assert_eq!(f.columns, vec![0, 2]);
        assert_eq!(f.left_out, vec![3, 1]);
    }

    #[test]
    fn long_texts_wrap_before_anything_goes() {
        let f = fit(&[10, 60, 40], &[1, 2], &[0], 60);
        assert_eq!(f.columns, vec![0, 1, 2]);
        assert!(f.wrapped);
        assert_eq!(f.widths[0] + f.widths[1] + f.widths[2] + 4, 60);
        // Both texts share the room, the first listed keeping twice the
        // second's, rather than one shrinking to nothing.
        assert_eq!((f.widths[1], f.widths[2]), (31, 15), "{:?}", f.widths);
    }

    #[test]
    fn cells_wrap_at_blanks_and_cut_long_words() {
        assert_eq!(
            wrap_cell("boot with isolcpus=1 nohz_full=1", 12),
            vec!["boot with", "isolcpus=1", "nohz_full=1"]
        );
        assert_eq!(wrap_cell("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap_cell("", 4), vec![""]);
    }

    #[test]
    fn the_narrowed_line_names_wide() {
        assert_eq!(
            narrowed_line(&["P50", "P99.9"], false, 80),
            "(--wide shows all; left out to fit 80 columns: P50, P99.9)"
        );
        assert_eq!(
            narrowed_line(&[], true, 80),
            "(wrapped to fit 80 columns; --wide: one line a row)"
        );
    }
}
