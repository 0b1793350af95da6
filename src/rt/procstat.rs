//! Fields of `/proc/PID/stat`. The command name (field 2) is in parentheses
//! and may hold anything, blanks and parentheses included, so the fields are
//! counted after its last ')'.

/// Field `number` as proc(5) numbers them (1 is the pid; 3 the state, the
/// first after the name), or `None` when the text has no such field.
pub fn field(stat: &str, number: usize) -> Option<&str> {
    match number {
        0 => None,
        1 => stat.split_whitespace().next(),
        2 => Some(&stat[stat.find('(')? + 1..stat.rfind(')')?]),
        n => stat[stat.rfind(')')? + 1..].split_whitespace().nth(n - 3),
    }
}

/// Field `number` read as an integer.
pub fn number(stat: &str, number: usize) -> Option<i64> {
    field(stat, number)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_a_name_with_blanks_and_parentheses() {
        let line = "4242 (stress-ng (cpu) x) R 4200 4242 4100 0 -1 4194560 120 0 0 0 \
                    731 12 40 3 20 0 1 0 5000";
        assert_eq!(field(line, 1), Some("4242"));
        assert_eq!(field(line, 2), Some("stress-ng (cpu) x"));
        assert_eq!(field(line, 3), Some("R"));
        assert_eq!(number(line, 4), Some(4200));
        assert_eq!(number(line, 14), Some(731));
        assert_eq!(number(line, 22), Some(5000));
        assert_eq!(field(line, 23), None);
        assert_eq!(field(line, 0), None);
        assert_eq!(field("garbage", 3), None);
    }
}
