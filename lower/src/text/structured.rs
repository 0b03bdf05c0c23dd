//! The parser of the IR text format's structured form, as [`super::print_structured`]
//! writes it: the header, then `body {` and the tree, one statement per line:
//!
//! ```text
//! body {
//!     block bb0 (label):          ; Node::Code, its instructions indented below
//!         %r1 = add.u32 %r1, 1
//!     if !%p1 {                   ; Node::If, `} else {` before the else branch
//!     }
//!     switch %r2 {                ; Node::Switch, its cases by their labels
//!     case 0, case 3:
//!     default:
//!     }
//!     loop {                      ; Node::Loop
//!         break | continue | return
//!     }
//! }
//! ```
//!
//! Blocks are numbered as in the kernel they come from (any order, gaps allowed:
//! blocks the tree does not run are empty); their terminators are the tree's, so each
//! block's own is `return`.
//!
//! After the body, one line per emulation routine the kernel calls, `routine fnN NAME`
//! (`crate::ir::Routine::name`): a routine's body is the one its name determines,
//! which `crate::pass::routine` builds and structures, so it is named, not printed.
//! An `.approx` or Newton routine's is the one for a target with f64
//! (`crate::pass::emulate::add`); any routine a routine calls is named before it.

use std::collections::BTreeMap;

use ptxvk_frontend::Diagnostic;

use super::parse::{KernelParser, Line, Lines};
use crate::ir::*;

/// Parses every kernel of a structured IR text with its tree. Errors are spans into
/// `text`.
pub fn parse_structured(text: &str) -> Result<Vec<(Kernel, Vec<Node>)>, Diagnostic> {
    let mut lines = Lines::new(text);
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        let name = super::parse::kernel_name(line)?;
        let mut p = KernelParser::new(name, line.span);
        let first = p.header(&mut lines)?;
        if first.text != "body {" {
            return Err(first.error("expected `body {`"));
        }
        let mut tree = Tree { p, blocks: BTreeMap::new() };
        let (body, end) = tree.nodes(&mut lines)?;
        if end.text != "}" {
            return Err(end.error("expected `}` closing the body"));
        }
        let mut routines = Vec::new();
        loop {
            match lines.next() {
                Some(l) if l.text == "}" => break,
                Some(l) if l.text.starts_with("routine ") => routines.push(routine(l, &routines)?),
                Some(l) => return Err(l.error("expected `}` closing the kernel")),
                None => return Err(tree.p.unclosed()),
            }
        }
        let mut k = tree.p.k;
        k.functions = routines;
        let count = tree.blocks.keys().next_back().map_or(0, |b| b + 1).max(k.entry.index() + 1);
        k.blocks = (0..count)
            .map(|b| {
                tree.blocks.remove(&b).unwrap_or(Block {
                    label: None,
                    span: k.span,
                    insts: Vec::new(),
                    term: Terminator::Return,
                    term_span: k.span,
                })
            })
            .collect();
        out.push((k, body));
    }
    Ok(out)
}

/// `routine fnN NAME`, the routine of that name as `crate::pass::run` leaves it.
fn routine(line: Line<'_>, before: &[Function]) -> Result<Function, Diagnostic> {
    let bad = || line.error("expected `routine fnN NAME` naming an emulation routine");
    let mut words = line.text.split_whitespace().skip(1);
    let (Some(index), Some(name), None) = (words.next(), words.next(), words.next()) else {
        return Err(bad());
    };
    if index != format!("fn{}", before.len()) {
        return Err(line.error(format!("expected fn{}", before.len())));
    }
    let r = Routine::from_name(name).ok_or_else(bad)?;
    let failed = |d: Vec<Diagnostic>| {
        let what = d.first().map_or(String::new(), |d| d.message.clone());
        line.error(format!("routine {name}: {what}"))
    };
    // A routine that calls routines: those are named before it (in a kernel's order).
    if r.legalized() || !r.callees().is_empty() {
        let mut k = Kernel::new(String::new(), line.span, crate::abi::KernelAbi::default());
        k.functions = before.to_vec();
        let target = crate::pass::Target::default();
        crate::pass::emulate::add(&mut k, r, &target).map_err(|d| failed(vec![d]))?;
        let f = k.functions.pop().filter(|_| k.functions.len() == before.len());
        let f = f.ok_or_else(|| line.error("the routines it calls are not named before it"))?;
        return crate::pass::structured(f, before).map_err(failed);
    }
    crate::pass::routine(r).map_err(failed)
}

struct Tree {
    p: KernelParser,
    blocks: BTreeMap<usize, Block>,
}

/// Whether a line is a case label of a switch (`case 1, case 4:`, `default:`).
fn case_label(text: &str) -> Option<(Vec<u32>, bool)> {
    let labels = text.strip_suffix(':')?;
    let mut values = Vec::new();
    let mut is_default = false;
    for l in labels.split(',').map(str::trim) {
        match l.strip_prefix("case ") {
            Some(v) => values.push(super::parse::number(v.trim())?),
            None if l == "default" => is_default = true,
            None => return None,
        }
    }
    Some((values, is_default))
}

impl Tree {
    /// Statements up to the line that closes them (`}`, `} else {` or a case label),
    /// which is returned with them.
    fn nodes<'t>(&mut self, lines: &mut Lines<'t>) -> Result<(Vec<Node>, Line<'t>), Diagnostic> {
        let mut out = Vec::new();
        // The block whose instructions are being read.
        let mut open: Option<usize> = None;
        while let Some(line) = lines.next() {
            let text = line.text;
            if text == "}" || text == "} else {" || case_label(text).is_some() {
                return Ok((out, line));
            }
            if !matches!(text, "break" | "continue" | "return")
                && !text.ends_with('{')
                && !text.starts_with("block ")
            {
                let b = open.ok_or_else(|| line.error("instruction outside a block"))?;
                let inst = self.p.inst_line(line)?;
                if let Some(block) = self.blocks.get_mut(&b) {
                    block.insts.push(inst);
                }
                continue;
            }
            open = None;
            let node = match text {
                "break" => Node::Break,
                "continue" => Node::Continue,
                "return" => Node::Return,
                "loop {" => {
                    let (body, end) = self.nodes(lines)?;
                    closed(&end)?;
                    Node::Loop { body, span: line.span }
                }
                _ if text.starts_with("block ") => {
                    let (b, label) = KernelParser::block_header(&text["block ".len()..])
                        .ok_or_else(|| line.error("expected `block bbN:`"))?;
                    if self.blocks.contains_key(&b) {
                        return Err(line.error(format!("block bb{b} appears twice")));
                    }
                    let block = Block {
                        label: label.map(str::to_string),
                        span: line.span,
                        insts: Vec::new(),
                        term: Terminator::Return,
                        term_span: line.span,
                    };
                    self.blocks.insert(b, block);
                    open = Some(b);
                    Node::Code(BlockId(b as u32))
                }
                _ => self.compound(line, lines)?,
            };
            out.push(node);
        }
        Err(self.p.unclosed())
    }

    /// `if P {` or `switch R {` and what they hold.
    fn compound<'t>(&mut self, line: Line<'t>, lines: &mut Lines<'t>) -> Result<Node, Diagnostic> {
        let head = line.text.strip_suffix('{').map(str::trim).unwrap_or("");
        if let Some(p) = head.strip_prefix("if ") {
            let (cond, negate) = self.p.pred(line, p.trim())?;
            let (then, end) = self.nodes(lines)?;
            let otherwise = if end.text == "} else {" {
                let (otherwise, end) = self.nodes(lines)?;
                closed(&end)?;
                otherwise
            } else {
                closed(&end)?;
                Vec::new()
            };
            return Ok(Node::If { cond, negate, then, otherwise, span: line.span });
        }
        let Some(r) = head.strip_prefix("switch ") else {
            return Err(line.error("expected a statement of the structured IR"));
        };
        let selector = self.p.reg(line, r.trim())?;
        let mut cases = Vec::new();
        let mut label = lines.next().ok_or_else(|| self.p.unclosed())?;
        while let Some((values, is_default)) = case_label(label.text) {
            let (body, end) = self.nodes(lines)?;
            cases.push(SwitchCase { values, is_default, body });
            label = end;
        }
        closed(&label)?;
        Ok(Node::Switch { selector, cases, span: line.span })
    }
}

fn closed(end: &Line<'_>) -> Result<(), Diagnostic> {
    if end.text == "}" {
        Ok(())
    } else {
        Err(end.error("expected `}`"))
    }
}
