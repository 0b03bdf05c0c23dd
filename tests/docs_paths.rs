//! The docs name files that exist (issue "Middle end II", item 6: `docs/architecture.md`
//! is the map a newcomer reads first, so it must describe what is built).
//!
//! Every inline code span of `README.md` and `docs/*.md` that is a repository path
//! (`lower/src/pass/inline.rs`, `tests/kernels/`, `scripts/gen-ptx`) must exist; a
//! shortened path (`pass/inline.rs`, `emit/sync.rs`) must be the end of one, a file
//! name (`inline.rs`) the name of one; a pattern
//! (`tests/kernels/*.cu`, `lower/tests/passes/NAME.ir`) must match a file. Every Rust
//! path that starts at a workspace crate, a module its `lib.rs` declares or a test file
//! (`pass::inline`, `sema::Resolver`, `abi::window::SHARED_WINDOW`) must name module
//! files down to an item the last of them defines; every `Type::member`
//! (`InstKind::Warp`, `Resolver::operation`) a member of a type the workspace declares
//! (in a file that declares or implements it). Every relative link
//! (`[status](docs/status.md#forward-progress)`) must name a file and, after `#`, one
//! of its headings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ptxvk::frontend::instructions::Opcode;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files whose code spans are checked.
fn docs() -> Vec<PathBuf> {
    let mut docs = vec![repo().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("read docs/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// Every file and directory of the repository (relative, `/`-separated; directories
/// end in `/`), but the build output and hidden directories.
fn repository_entries() -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || (rel.is_empty() && name == "target") {
                continue;
            }
            let path = format!("{rel}{name}");
            if entry.path().is_dir() {
                out.push(format!("{path}/"));
                walk(&entry.path(), &format!("{path}/"), out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), "", &mut out);
    out.sort();
    out
}

/// A Markdown text with its fenced code blocks blanked (their lines kept empty, so
/// that offsets still give line numbers).
fn prose(text: &str) -> String {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    prose
}

/// The line of byte `offset` of `text`.
fn line_at(text: &str, offset: usize) -> usize {
    1 + text[..offset].matches('\n').count()
}

/// The byte ranges of the inline code spans of `prose`, backticks left out. A span
/// opens with a run of backticks and closes at the next run of the same length
/// (CommonMark, *Code spans*).
fn code_spans(prose: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = prose.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let start = i + open;
        let mut j = start;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        let Some(end) = close else { break };
        spans.push(start..end);
        i = end + open;
    }
    spans
}

/// The targets of the inline links of `prose` outside code spans (`[text](target)`),
/// with their offsets.
fn links(prose: &str, spans: &[std::ops::Range<usize>]) -> Vec<(usize, String)> {
    prose
        .match_indices("](")
        .filter(|(at, _)| !spans.iter().any(|s| s.contains(at)))
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            Some((at, rest[..rest.find(')')?].to_string()))
        })
        .collect()
}

/// The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped,
/// spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of a Markdown text.
fn heading_anchors(text: &str) -> Vec<String> {
    prose(text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// Whether a code span is one file's name (`inline.rs`), not an instruction with a
/// modifier that looks like one (`cvt.rs`, stochastic rounding).
fn is_file_name(span: &str) -> bool {
    let file_char = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
    let stem = span.split('.').next().unwrap_or("");
    span.chars().all(file_char)
        && EXTENSIONS.iter().any(|e| span.ends_with(e) && span.len() > e.len())
        && !Opcode::ALL.iter().any(|op| op.name() == stem)
}

/// Extensions of the files the docs name by a shortened path.
const EXTENSIONS: &[&str] = &[".rs", ".md", ".ptx", ".cu", ".ir", ".py", ".comp", ".toml", ".sh"];

/// Path components that stand for any name (`tests/out/{ir,…}/DIR/NAME.*`).
fn is_placeholder(component: &str) -> bool {
    component.contains(['*', '{', '…'])
        || ["NAME", "DIR", "HASH"].iter().any(|p| component.contains(p))
}

/// A pattern path with its placeholders (`NAME`, `{ir,structured}`, `…`) made `*`.
fn wildcard_of(path: &str) -> String {
    let mut pattern = String::new();
    let mut in_braces = false;
    for c in path.chars() {
        match c {
            '{' => in_braces = true,
            '}' => {
                in_braces = false;
                pattern.push('*');
            }
            '…' if !in_braces => pattern.push('*'),
            _ if !in_braces => pattern.push(c),
            _ => {}
        }
    }
    ["NAME", "DIR", "HASH"].iter().fold(pattern, |p, word| p.replace(word, "*"))
}

/// Whether `text` matches `pattern`, where `*` matches any characters.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split gives one part");
    let Some(mut tail) = text.strip_prefix(first) else { return false };
    for (k, part) in rest.iter().enumerate() {
        if k + 1 == rest.len() {
            return tail.ends_with(part);
        }
        let Some(at) = tail.find(part) else { return false };
        tail = &tail[at + part.len()..];
    }
    tail.is_empty()
}

/// What a code span names as a repository path, if it names one: the span itself, or
/// the first word of a command line that starts with a repository directory.
fn path_of<'a>(span: &'a str, roots: &[String]) -> Option<&'a str> {
    let word = span.split_whitespace().next()?;
    let word = word.trim_end_matches([',', ':', ')']);
    if !word.contains('/') || word.starts_with(['~', '/', '%', '$', '.', '-']) {
        return None;
    }
    let root = word.split('/').next()?;
    // The build output, and a directory of the user's (`DIR/module-PID-N.ptx`).
    if root == "target" || is_placeholder(root) {
        return None;
    }
    let rooted = roots.iter().any(|r| r.trim_end_matches('/') == root);
    if word != span && !rooted {
        return None;
    }
    (rooted || word.ends_with('/') || EXTENSIONS.iter().any(|e| word.ends_with(e))).then_some(word)
}

/// Why a path the docs name names nothing in the repository, if it does not.
fn missing_path(path: &str, roots: &[String], entries: &[String]) -> Option<String> {
    let root = path.split('/').next().unwrap_or("");
    let rooted = roots.iter().any(|r| r.trim_end_matches('/') == root);
    let pattern = wildcard_of(path.trim_end_matches('/'));
    let shortened = format!("*/{pattern}");
    let found = entries.iter().any(|e| {
        let entry = e.trim_end_matches('/');
        let kind_fits = !path.ends_with('/') || e.ends_with('/');
        kind_fits
            && (wildcard_match(&pattern, entry) || !rooted && wildcard_match(&shortened, entry))
    });
    (!found).then(|| {
        if rooted {
            format!("`{path}` does not exist")
        } else {
            format!("`{path}` is the end of no repository path")
        }
    })
}

/// A module the docs may name paths in: its name, its file and the directory of its
/// submodules.
struct Module {
    name: String,
    file: PathBuf,
    dir: PathBuf,
}

/// The modules a docs path may start with (`pass::inline`, `ptxvk_lower::lower_each`,
/// `warp_e2e::collectives_over_the_lanes_that_arrive`): every workspace crate (by its
/// package name and by its directory's, `abi::window`), the modules its `lib.rs`
/// declares, and the integration test files.
fn modules() -> Vec<Module> {
    let mut crates = vec![repo()];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo())
        .expect("read the repository")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("src/lib.rs").exists())
        .collect();
    dirs.sort();
    crates.extend(dirs);
    let mut modules = Vec::new();
    for dir in crates {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read a manifest");
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a package name")
            .trim_matches('"')
            .replace('-', "_");
        let src = dir.join("src");
        let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read a lib.rs");
        for line in lib.lines() {
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let Some(module) = line.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) else {
                continue;
            };
            let file = src.join(format!("{module}.rs"));
            let file = if file.exists() { file } else { src.join(module).join("mod.rs") };
            modules.push(Module { name: module.to_string(), file, dir: src.join(module) });
        }
        // The docs call a crate by its package name or its directory (`abi::window`).
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or("").replace('-', "_");
        for name in [name, folder] {
            modules.push(Module { name, file: src.join("lib.rs"), dir: src.clone() });
        }
    }
    for entry in
        std::fs::read_dir(repo().join("tests")).expect("read tests/").filter_map(Result::ok)
    {
        let file = entry.path();
        let Some(name) =
            file.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".rs"))
        else {
            continue;
        };
        let dir = repo().join("tests").join(name);
        modules.push(Module { name: name.to_string(), file, dir });
    }
    modules
}

/// Whether the Rust module (its file, and the directory of its submodules) defines an
/// item named `name`: a `fn`, type, `const`, `mod` (at any depth: `impl` members count,
/// as `sema::Resolver` and `pass::run` do), an enum variant or field, or re-exports it (`pub use
/// variable::Variable;`, or a glob `pub use copy::*;` of a submodule that defines it).
fn defines(file: &Path, dir: &Path, name: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else { return false };
    let keywords = ["fn", "struct", "enum", "type", "const", "static", "trait", "mod"];
    let words_of = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let declared = text.lines().any(|line| {
        let words = words_of(line);
        // An enum variant or a field (`Warp(WarpInst),`, `pub thread_regs: …`).
        let line = line.trim_start();
        let line = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| line.strip_prefix(v))
            .unwrap_or(line);
        let variant =
            line.strip_prefix(name).is_some_and(|rest| rest.starts_with([',', '(', '{', ' ', ':']));
        words.windows(2).any(|w| keywords.contains(&w[0].as_str()) && w[1] == name) || variant
    });
    declared
        || text.split("pub use ").skip(1).any(|reexport| {
            let statement = reexport.split(';').next().unwrap_or("");
            let words = words_of(statement);
            words.iter().any(|w| w == name)
                || (statement.trim_end().ends_with("::*")
                    && words
                        .first()
                        .is_some_and(|m| defines(&dir.join(format!("{m}.rs")), &dir.join(m), name)))
        })
}

/// Every Rust file of the workspace, but the build output.
fn rust_files() -> Vec<PathBuf> {
    repository_entries()
        .into_iter()
        .filter(|e| e.ends_with(".rs"))
        .map(|e| repo().join(e))
        .collect()
}

/// The files that declare each type or implement something for it (`enum InstKind`,
/// `impl<'m> Resolver<'m>`), by the type's name.
fn files_by_type() -> BTreeMap<String, BTreeSet<PathBuf>> {
    let mut index: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).expect("read a Rust file");
        for line in text.lines() {
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            let kinds = ["enum", "struct", "trait", "type", "union"];
            let declared = words.windows(2).filter(|w| kinds.contains(&w[0])).map(|w| w[1]);
            let implemented = words
                .iter()
                .copied()
                .filter(|_| line.trim_start().starts_with("impl"))
                .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()));
            for ty in declared.chain(implemented) {
                index.entry(ty.to_string()).or_default().insert(file.clone());
            }
        }
    }
    index
}

/// The type and member a code span names (`InstKind::Warp`, `Resolver::operation`): a
/// path whose first segment is a type's name. A pytest id (`TestUfunc::test_x`) is
/// Python's, not a Rust path.
fn type_member(span: &str) -> Option<(&str, &str)> {
    let path = span.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next()?;
    let mut segments = path.split("::");
    let (ty, member) = (segments.next()?, segments.next()?);
    let is_type = ty.starts_with(|c: char| c.is_ascii_uppercase());
    (is_type && !member.is_empty() && !member.starts_with("test_")).then_some((ty, member))
}

/// Why a module path the docs name (`pass::inline`) names nothing in `module`, if it
/// does not: each segment a submodule's file, up to one the module's file defines.
fn missing_item(path: &str, module: &Module) -> Option<String> {
    let (mut file, mut dir) = (module.file.clone(), module.dir.clone());
    for segment in path.split("::").skip(1) {
        let sub_file = dir.join(format!("{segment}.rs"));
        let sub_mod = dir.join(segment).join("mod.rs");
        if sub_file.exists() {
            (file, dir) = (sub_file, dir.join(segment));
        } else if sub_mod.exists() {
            (file, dir) = (sub_mod, dir.join(segment));
        } else if defines(&file, &dir, segment) {
            return None;
        } else {
            let shown = file.strip_prefix(repo()).unwrap_or(&file).display().to_string();
            return Some(format!(
                "`{path}`: no module `{segment}` and no item of that name in {shown}"
            ));
        }
    }
    None
}

#[test]
fn the_docs_name_paths_modules_and_items_that_exist() {
    let entries = repository_entries();
    // The repository's top-level directories: a path starting with one is a full path.
    let roots: Vec<String> = entries
        .iter()
        .filter(|e| e.ends_with('/') && e.matches('/').count() == 1)
        .cloned()
        .collect();
    let modules = modules();
    let types = files_by_type();
    let (mut paths, mut module_paths, mut type_members, mut stale) = (0, 0, 0, Vec::new());
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).expect("read a doc");
        let name = doc.strip_prefix(repo()).unwrap_or(&doc).display().to_string();
        let prose = prose(&text);
        for range in code_spans(&prose) {
            let line = line_at(&prose, range.start);
            let span = prose[range].trim().to_string();
            let module_path = span
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .filter(|p| p.contains("::"));
            let root = module_path.and_then(|p| p.split("::").next()).unwrap_or("");
            let candidates: Vec<&Module> = modules.iter().filter(|m| m.name == root).collect();
            let problem = if let Some(path) = path_of(&span, &roots) {
                paths += 1;
                missing_path(path, &roots, &entries)
            } else if is_file_name(&span) {
                paths += 1;
                let pattern = wildcard_of(&span);
                let named =
                    |e: &String| wildcard_match(&pattern, e.rsplit('/').next().unwrap_or(""));
                (!entries.iter().any(named))
                    .then(|| format!("`{span}` is the name of no repository file"))
            } else if let Some((ty, member)) = type_member(&span) {
                type_members += 1;
                let mut files = types.get(ty).into_iter().flatten();
                let found = files.any(|f| defines(f, &f.with_extension(""), member));
                (!found)
                    .then(|| format!("`{ty}::{member}`: no type `{ty}` with a member `{member}`"))
            } else if let (Some(path), false) = (module_path, candidates.is_empty()) {
                module_paths += 1;
                // A name two modules share (`abi`, `check`) resolves in either.
                let problems: Vec<String> =
                    candidates.iter().filter_map(|m| missing_item(path, m)).collect();
                (problems.len() == candidates.len()).then(|| problems[0].clone())
            } else {
                None
            };
            if let Some(problem) = problem {
                stale.push(format!("{name}:{line}: {problem}"));
            }
        }
    }
    assert!(stale.is_empty(), "the docs name what does not exist:\n{}", stale.join("\n"));
    // The docs name hundreds of both: fewer means the code spans were not found.
    assert!(
        paths > 300 && module_paths > 50 && type_members > 100,
        "only {paths} paths, {module_paths} module paths and {type_members} type members seen"
    );
}

/// Every relative link of the docs (`[status](docs/status.md#forward-progress)`) names
/// a file or directory that exists, and a heading of it where it names one.
#[test]
fn the_docs_links_resolve() {
    let mut stale = Vec::new();
    let mut checked = 0;
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).expect("read a doc");
        let name = doc.strip_prefix(repo()).unwrap_or(&doc).display().to_string();
        let prose = prose(&text);
        for (at, target) in links(&prose, &code_spans(&prose)) {
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            checked += 1;
            let line = line_at(&prose, at);
            let (path, heading) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() { doc.clone() } else { doc.with_file_name(path) };
            if !file.exists() {
                stale.push(format!("{name}:{line}: `{target}`: no file `{path}`"));
                continue;
            }
            let Ok(linked) = std::fs::read_to_string(&file) else { continue };
            let headings = heading_anchors(&linked);
            if !heading.is_empty() && !headings.iter().any(|h| *h == heading) {
                stale.push(format!("{name}:{line}: `{target}`: no heading `#{heading}`"));
            }
        }
    }
    assert!(stale.is_empty(), "the docs link to what does not exist:\n{}", stale.join("\n"));
    assert!(checked > 40, "only {checked} links seen");
}
