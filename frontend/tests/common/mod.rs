//! Helpers shared by the frontend's integration tests.

/// The `Debug` form of an AST with every span (printed as `start..end`) blanked, so
/// that two ASTs compare equal exactly when they agree on everything but spans.
pub fn span_free(ast: &impl std::fmt::Debug) -> String {
    let text = format!("{ast:#?}");
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = |mut j: usize| {
            let s = j;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            (j > s).then_some(j)
        };
        let at_word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if at_word_start {
            if let Some(j) = digits(i) {
                if bytes.get(j..j + 2) == Some(b"..") {
                    if let Some(k) = digits(j + 2) {
                        out.push_str("<span>");
                        i = k;
                        continue;
                    }
                }
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

/// Where two span-free dumps first differ, for failure messages.
pub fn first_difference(a: &str, b: &str) -> String {
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {n} of the AST dump: `{x}` vs `{y}`");
        }
    }
    "the dumps differ in length".into()
}
