//! The shape the codebase keeps (issue "Middle end II"): no Rust file in the workspace
//! over 1,500 lines and no function over 200, so that each file is one concern and each
//! function can be read at once. Generated tables are the exception: none is Rust here.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 1500;
const MAX_FUNCTION_LINES: usize = 200;

/// Every `.rs` file of the workspace but the build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The functions of `text` longer than the limit: a `fn` item's first line to the
/// line that closes it at the same indentation, as rustfmt lays them out.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(name) = fn_name(trimmed) else { continue };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = lines[i + 1..].iter().position(|l| *l == close) else { continue };
        let n = end + 2;
        if n > MAX_FUNCTION_LINES {
            long.push((i + 1, name.to_string(), n));
        }
    }
    long
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest = rest.strip_prefix("extern \"C\" ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

#[test]
fn no_file_over_1500_lines_and_no_function_over_200() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 100, "found only {} Rust files under {}", files.len(), root.display());
    let mut problems = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let shown = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            problems.push(format!("{shown}: {n} lines (at most {MAX_FILE_LINES})"));
        }
        for (line, name, n) in long_functions(&text) {
            problems.push(format!(
                "{shown}:{line}: fn {name} has {n} lines (at most {MAX_FUNCTION_LINES})"
            ));
        }
    }
    assert!(problems.is_empty(), "split these:\n{}", problems.join("\n"));
}

#[test]
fn the_measure_finds_long_functions() {
    let body = "    x();\n".repeat(MAX_FUNCTION_LINES);
    let text = format!("fn short() {{\n}}\n\npub(crate) fn long() {{\n{body}}}\n");
    assert_eq!(long_functions(&text), vec![(4, "long".to_string(), MAX_FUNCTION_LINES + 2)]);
    assert_eq!(fn_name("pub unsafe extern \"C\" fn cuInit(flags: u32) -> R {"), Some("cuInit"));
}

// ---------------------------------------------------------------------------------------
// No import circle between the files of one crate (issue "Middle end II", item 5): a
// reader of a file should find what it builds on below it, never a file that builds on
// it. The measure reads every path that starts at `crate::`, `super::` or `self::` (in
// `use` lines and in code), and every path through a child module, resolves it through
// the crate's module tree and its `use` aliases to the file that defines the module,
// and finds the strongly connected files (Tarjan).

/// The crates whose files are checked, by their folder.
const CRATES: [&str; 8] =
    [".", "abi", "frontend", "lower", "spirv-backend", "vk-runtime", "native-cuda", "cuda-driver"];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

/// The tokens of Rust source that paths are made of; comments are dropped, literals are
/// kept whole so that nothing in them reads as a path.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"'
            || ((c == 'r' || c == 'b') && (next == '"' || next == '#' || next == 'r'))
        {
            // A string, byte string or raw string: `r#"..."#` closes at `"` and as many `#`.
            let start = i;
            while chars[i] != '"' && chars[i] != '#' {
                i += 1;
                if i >= chars.len() || !(chars[i] == '"' || chars[i] == '#' || chars[i] == 'r') {
                    break;
                }
            }
            if i >= chars.len() || (chars[i] != '"' && chars[i] != '#') {
                // `r` or `b` began an identifier after all.
                i = start;
                let end = (i..chars.len()).find(|&j| !ident_char(chars[j])).unwrap_or(chars.len());
                out.push(Token::Ident(chars[i..end].iter().collect()));
                i = end;
                continue;
            }
            let raw = chars[start..i].contains(&'r');
            let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
            i += hashes;
            if chars.get(i) != Some(&'"') {
                // `r#ident`, a raw identifier.
                let end = (i..chars.len()).find(|&j| !ident_char(chars[j])).unwrap_or(chars.len());
                out.push(Token::Ident(chars[i..end].iter().collect()));
                i = end;
                continue;
            }
            i += 1;
            let body = i;
            loop {
                if i >= chars.len() {
                    break;
                }
                if !raw && chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&c| c == '#') {
                    break;
                }
                i += 1;
            }
            out.push(Token::Str(chars[body..i.min(chars.len())].iter().collect()));
            i = (i + 1 + hashes).min(chars.len());
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if ident_char(c) {
            let end = (i..chars.len()).find(|&j| !ident_char(chars[j])).unwrap_or(chars.len());
            out.push(Token::Ident(chars[i..end].iter().collect()));
            i = end;
        } else if c == ':' && next == ':' {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// One module of a crate: the file that holds it (inline modules share their file's),
/// its parent, its child modules and the names its `use` items bring in (name → the
/// path as written).
#[derive(Default)]
struct Module {
    file: usize,
    parent: Option<usize>,
    children: std::collections::BTreeMap<String, usize>,
    aliases: std::collections::BTreeMap<String, Vec<String>>,
}

/// A path as written, the module it is written in, and the file it is written in.
struct PathUse {
    module: usize,
    file: usize,
    segments: Vec<String>,
}

#[derive(Default)]
struct Crate {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
    uses: Vec<PathUse>,
}

impl Crate {
    /// Reads the crate rooted at `root` (a `lib.rs` or `main.rs`) and every module file
    /// it declares.
    fn read(root: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.read_file(root.to_path_buf(), None, root.parent().unwrap_or(root).to_path_buf());
        krate
    }

    /// Reads one module file; `dir` is where its child modules' files stand.
    fn read_file(&mut self, path: PathBuf, parent: Option<usize>, dir: PathBuf) -> usize {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let file = self.files.len();
        self.files.push(path);
        let module = self.modules.len();
        self.modules.push(Module { file, parent, ..Module::default() });
        let toks = tokens(&text);
        self.read_items(&toks, module, file, &dir);
        module
    }

    /// Walks the tokens of one file: module declarations, inline modules, `use` items
    /// and the paths of the code.
    fn read_items(&mut self, toks: &[Token], top: usize, file: usize, dir: &Path) {
        // The module each open brace belongs to (an inline `mod x {` opens a new one).
        // Test code (`#[cfg(test)] mod tests`) is left out: what a test imports is no
        // part of what a reader of the file builds on.
        let mut scopes: Vec<(usize, PathBuf)> = vec![(top, dir.to_path_buf())];
        let mut pending_mod: Option<(usize, PathBuf)> = None;
        let mut path_attr: Option<String> = None;
        let mut cfg_test = false;
        let mut test_depth: Option<usize> = None;
        let ident = |i: usize| match toks.get(i) {
            Some(Token::Ident(s)) => Some(s.as_str()),
            _ => None,
        };
        let mut i = 0;
        while i < toks.len() {
            let (module, here) = scopes.last().cloned().unwrap_or((top, dir.to_path_buf()));
            if let Some(depth) = test_depth {
                match toks[i] {
                    Token::Punct('{') => scopes.push((module, here)),
                    Token::Punct('}') => {
                        scopes.pop();
                        if scopes.len() == depth {
                            test_depth = None;
                        }
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            match &toks[i] {
                Token::Punct('#')
                    if ident(i + 2) == Some("cfg") && ident(i + 4) == Some("test") =>
                {
                    cfg_test = toks.get(i + 5) == Some(&Token::Punct(')'));
                }
                Token::Punct('#') if ident(i + 2) == Some("path") => {
                    if let Some(Token::Str(s)) = toks.get(i + 4) {
                        path_attr = Some(s.clone());
                    }
                }
                Token::Punct('{') => {
                    scopes.push(pending_mod.take().unwrap_or((module, here.clone())));
                }
                Token::Punct('}') if scopes.len() > 1 => {
                    scopes.pop();
                }
                Token::Ident(kw) if kw == "mod" && std::mem::take(&mut cfg_test) => {
                    if toks.get(i + 2) == Some(&Token::Punct('{')) {
                        test_depth = Some(scopes.len());
                        scopes.push((module, here));
                    }
                    i += 3;
                    continue;
                }
                Token::Ident(kw) if kw == "mod" => {
                    if let Some(name) = ident(i + 1) {
                        let name = name.to_string();
                        let child_dir = here.join(&name);
                        match toks.get(i + 2) {
                            Some(Token::Punct(';')) => {
                                let path = match path_attr.take() {
                                    Some(p) => here.join(p),
                                    None if here.join(format!("{name}.rs")).exists() => {
                                        here.join(format!("{name}.rs"))
                                    }
                                    None => child_dir.join("mod.rs"),
                                };
                                let child = self.read_file(path, Some(module), child_dir);
                                self.modules[module].children.insert(name, child);
                            }
                            Some(Token::Punct('{')) => {
                                let child = self.modules.len();
                                self.modules.push(Module {
                                    file,
                                    parent: Some(module),
                                    ..Module::default()
                                });
                                self.modules[module].children.insert(name, child);
                                pending_mod = Some((child, child_dir));
                            }
                            _ => {}
                        }
                        i += 2;
                        continue;
                    }
                }
                Token::Ident(kw) if kw == "use" => {
                    let mut leaves = Vec::new();
                    i = use_tree(toks, i + 1, &mut Vec::new(), &mut leaves);
                    for (segments, name) in leaves {
                        if let Some(name) = name {
                            self.modules[module].aliases.insert(name, segments.clone());
                        }
                        self.uses.push(PathUse { module, file, segments });
                    }
                    continue;
                }
                Token::Ident(_) if toks.get(i + 1) == Some(&Token::PathSep) => {
                    // A path in code; one that continues a longer path was read with it.
                    let continues = i > 0
                        && (toks[i - 1] == Token::PathSep || toks[i - 1] == Token::Punct('$'));
                    // `pub(in crate::m)` says who may see an item; it imports nothing.
                    let visibility = i >= 3
                        && toks[i - 1] == Token::Ident("in".into())
                        && toks[i - 2] == Token::Punct('(')
                        && toks[i - 3] == Token::Ident("pub".into());
                    if !continues && !visibility {
                        let mut segments = Vec::new();
                        while let Some(s) = ident(i) {
                            segments.push(s.to_string());
                            if toks.get(i + 1) != Some(&Token::PathSep) {
                                break;
                            }
                            i += 2;
                        }
                        // A call (`m::f(..)`, `m::f!`) names a function or macro last, even
                        // where a child module has its name.
                        if matches!(toks.get(i + 1), Some(Token::Punct('(' | '!'))) {
                            segments.pop();
                        }
                        self.uses.push(PathUse { module, file, segments });
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The module a path leads to, written in `from`: through `crate`, `super`, `self`,
    /// child modules and `use` aliases, as far as modules go. `None`: outside the crate.
    fn resolve(&self, from: usize, segments: &[String], depth: usize) -> Option<usize> {
        let mut at = from;
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                at = 0;
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    at = self.modules[at].parent?;
                    rest = &rest[1..];
                }
            }
            Some(first) if !self.modules[at].children.contains_key(first) => {
                // A name brought in by `use` here (or in a module above an inline one).
                let mut scope = Some(at);
                while let Some(m) = scope {
                    if let Some(target) = self.modules[m].aliases.get(first) {
                        if depth > 8 || target.first() == Some(&first.to_string()) {
                            return None;
                        }
                        let mut path = target.clone();
                        path.extend(rest[1..].iter().cloned());
                        return self.resolve(m, &path, depth + 1);
                    }
                    let up = self.modules[m].parent;
                    scope = up.filter(|&p| self.modules[p].file == self.modules[at].file);
                }
                return None;
            }
            _ => {}
        }
        for (k, segment) in rest.iter().enumerate() {
            if let Some(&child) = self.modules[at].children.get(segment) {
                at = child;
            } else if let Some(target) = self.modules[at].aliases.get(segment) {
                if depth > 8 {
                    return Some(at);
                }
                let mut path = target.clone();
                path.extend(rest[k + 1..].iter().cloned());
                return self.resolve(at, &path, depth + 1);
            } else {
                break;
            }
        }
        Some(at)
    }

    /// Which file imports which: `edges[a]` holds each file that file `a` takes a name from.
    /// A module file and the file that declares it (`mod x;`) are one unit to a reader, the
    /// parent the face of its children (Rust gives children its private items): an arrow
    /// between the two is no circle's.
    fn edges(&self) -> Vec<std::collections::BTreeSet<usize>> {
        let mut declared_by = vec![None; self.files.len()];
        for m in &self.modules {
            if let Some(parent) = m.parent {
                let parent_file = self.modules[parent].file;
                if parent_file != m.file {
                    declared_by[m.file] = Some(parent_file);
                }
            }
        }
        let mut edges = vec![std::collections::BTreeSet::new(); self.files.len()];
        for u in &self.uses {
            if let Some(target) = self.resolve(u.module, &u.segments, 0) {
                let to = self.modules[target].file;
                let face = declared_by[u.file] == Some(to) || declared_by[to] == Some(u.file);
                if to != u.file && !face {
                    edges[u.file].insert(to);
                }
            }
        }
        edges
    }
}

/// Reads one `use` tree from `i` (after `use`, or after a `{` or `,` of a group),
/// appending each leaf path and the name it binds (`None` for a glob or `self` group
/// member that binds the prefix's last name). Returns the index after the tree's end.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &mut Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let depth = prefix.len();
    loop {
        match toks.get(i) {
            Some(Token::Ident(s)) if s == "self" && depth > 0 && prefix.len() == depth => {
                leaves.push((prefix.clone(), prefix.last().cloned()));
                i += 1;
            }
            Some(Token::Ident(s)) if s == "as" => {
                if let (Some(Token::Ident(alias)), Some(last)) =
                    (toks.get(i + 1), leaves.last_mut())
                {
                    last.1 = Some(alias.clone());
                }
                i += 2;
            }
            Some(Token::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
                if toks.get(i) != Some(&Token::PathSep) {
                    leaves.push((prefix.clone(), prefix.last().cloned()));
                }
            }
            Some(Token::PathSep) => i += 1,
            Some(Token::Punct('*')) => {
                leaves.push((prefix.clone(), None));
                i += 1;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                loop {
                    i = use_tree(toks, i, prefix, leaves);
                    match toks.get(i) {
                        Some(Token::Punct(',')) => i += 1,
                        Some(Token::Punct('}')) => {
                            i += 1;
                            break;
                        }
                        _ => break,
                    }
                }
            }
            _ => break,
        }
        if matches!(toks.get(i), Some(Token::Punct(',' | '}' | ';')) | None) {
            break;
        }
    }
    prefix.truncate(depth);
    if toks.get(i) == Some(&Token::Punct(';')) && depth == 0 {
        i += 1;
    }
    i
}

/// The circles of a graph: its strongly connected parts of more than one node (Tarjan).
fn circles(edges: &[std::collections::BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [std::collections::BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk<'_>, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &to in w.edges[v].iter() {
            match w.index[to] {
                None => {
                    visit(w, to);
                    w.low[v] = w.low[v].min(w.low[to]);
                }
                Some(i) if w.on_stack[to] => w.low[v] = w.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut part = Vec::new();
            while let Some(x) = w.stack.pop() {
                w.on_stack[x] = false;
                part.push(x);
                if x == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                w.found.push(part);
            }
        }
    }
    let n = edges.len();
    let mut w = Walk {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if w.index[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.found.sort();
    w.found
}

/// Each circle of the crate in `dir` (crate roots `src/lib.rs` and `src/main.rs`), as
/// the files in it and the arrows between them, paths from the workspace root.
fn crate_circles(workspace: &Path, dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    for root in ["src/lib.rs", "src/main.rs"] {
        let root = workspace.join(dir).join(root);
        if !root.exists() {
            continue;
        }
        let krate = Crate::read(&root);
        let edges = krate.edges();
        let name = |f: usize| {
            let p = &krate.files[f];
            p.strip_prefix(workspace).unwrap_or(p).display().to_string()
        };
        for part in circles(&edges) {
            let files: Vec<String> = part.iter().map(|&f| name(f)).collect();
            let arrows: Vec<String> = part
                .iter()
                .flat_map(|&a| edges[a].iter().filter(|b| part.contains(b)).map(move |&b| (a, b)))
                .map(|(a, b)| format!("    {} -> {}", name(a), name(b)))
                .collect();
            found.push(format!("  {}\n{}", files.join(", "), arrows.join("\n")));
        }
    }
    found
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for dir in CRATES {
        assert!(root.join(dir).join("src/lib.rs").exists(), "no crate at {dir}/");
        problems.extend(crate_circles(&root, dir));
    }
    assert!(
        problems.is_empty(),
        "these files import each other in a circle; move what they share down into a \
         file that imports none of them:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_measure_finds_circles() {
    let dir = std::env::temp_dir().join(format!("code_shape_circles_{}", std::process::id()));
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod f;\nmod g;\npub use b::B;\n"),
        // a -> b through the re-export in lib.rs, b -> a through a path in code.
        ("a.rs", "use crate::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\nfn f() { let _ = crate::a::A; }\n"),
        // c -> d only in a comment, a string and a test: no circle.
        ("c.rs", "// crate::d::D\nconst S: &str = \"crate::d::D\";\n#[cfg(test)]\nmod tests {\n    use crate::d::D;\n}\n"),
        ("d.rs", "use crate::c;\nmod e;\npub struct D;\n"),
        // A child and the file that declares it are no circle.
        ("d/e.rs", "use super::D;\n"),
        // g -> f, and a visibility path in f that names g, which is no import.
        ("f.rs", "pub(in crate::g) fn f() {}\n"),
        ("g.rs", "use crate::f::f;\n"),
    ];
    for (name, text) in files {
        let path = dir.join("src").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let found = crate_circles(&dir, ".");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec!["  src/a.rs, src/b.rs\n    src/a.rs -> src/b.rs\n    src/b.rs -> src/a.rs"]
    );
}
