//! The parser of the IR text format's CFG form (the grammar is in the module doc).

use std::collections::BTreeMap;

use ptxvk_frontend::ast::ScalarType;
use ptxvk_frontend::{Diagnostic, Span};

use super::*;
use crate::abi::{KernelAbi, ParamSlot};

/// Parses every kernel of an IR text. Errors are spans into `text`.
pub fn parse(text: &str) -> Result<Vec<Kernel>, Diagnostic> {
    let mut lines = Lines::new(text);
    let mut kernels = Vec::new();
    while let Some(line) = lines.next() {
        let name = kernel_name(line)?;
        kernels.push(KernelParser::new(name, line.span).parse(&mut lines)?);
    }
    Ok(kernels)
}

/// The name in `kernel NAME {`.
pub(super) fn kernel_name<'t>(line: Line<'t>) -> Result<&'t str, Diagnostic> {
    line.text
        .strip_prefix("kernel ")
        .and_then(|rest| rest.strip_suffix('{'))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| line.error("expected `kernel NAME {`"))
}

/// One significant line: comments and surrounding blanks removed.
#[derive(Clone, Copy)]
pub(super) struct Line<'a> {
    pub(super) text: &'a str,
    pub(super) span: Span,
}

impl Line<'_> {
    pub(super) fn error(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.span, message)
    }
}

pub(super) struct Lines<'a> {
    rest: std::str::SplitInclusive<'a, char>,
    offset: usize,
}

impl<'a> Lines<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Lines { rest: text.split_inclusive('\n'), offset: 0 }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        for raw in self.rest.by_ref() {
            let line_start = self.offset;
            self.offset += raw.len();
            let code = raw.split(';').next().unwrap_or("");
            let text = code.trim();
            if text.is_empty() {
                continue;
            }
            let start = line_start + (code.len() - code.trim_start().len());
            let span = Span::new(start as u32, (start + text.len()) as u32);
            return Some(Line { text, span });
        }
        None
    }
}

pub(super) struct KernelParser {
    pub(super) k: Kernel,
    names: BTreeMap<String, RegId>,
    /// Every block reference with its line, checked once all blocks are known.
    block_refs: Vec<(BlockId, Span)>,
    entry_span: Option<Span>,
    /// Parsing a function of the kernel: its `param` and `return` lines.
    function: Option<(PassedRegs, PassedRegs)>,
    /// A function's `stack REG` line.
    stack_pointer: Option<RegId>,
    /// A function's `thread REG KERNEL_REG` lines, the kernel's register by name.
    thread_regs: Vec<(RegId, String, Span)>,
}

/// Splits `s` at top-level commas (not inside `[...]`).
fn split_operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

pub(super) fn number<T: TryFrom<u64>>(s: &str) -> Option<T> {
    let v = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => s.parse::<u64>().ok()?,
    };
    T::try_from(v).ok()
}

/// The modifiers of an opcode, consumed one by one; what remains is an error.
struct Modifiers<'a> {
    words: Vec<&'a str>,
}

impl<'a> Modifiers<'a> {
    fn flag(&mut self, word: &str) -> bool {
        match self.words.iter().position(|w| *w == word) {
            Some(i) => {
                self.words.remove(i);
                true
            }
            None => false,
        }
    }

    /// The first modifier `f` accepts, removed.
    fn take<T>(&mut self, f: impl Fn(&str) -> Option<T>) -> Option<T> {
        let i = self.words.iter().position(|w| f(w).is_some())?;
        f(self.words.remove(i))
    }

    /// The first modifier, which must be one `f` accepts.
    fn first<T>(&mut self, f: impl Fn(&str) -> Option<T>) -> Option<T> {
        let v = f(self.words.first()?)?;
        self.words.remove(0);
        Some(v)
    }

    fn ty(&mut self) -> Option<OpTy> {
        self.take(parse_op_ty)
    }

    fn mode(&mut self, prefix: &str) -> FloatMode {
        let ftz = self.flag("ftz");
        let sat = self.flag("sat");
        let rounding = self
            .take(|w| w.strip_prefix(prefix).and_then(Rounding::from_spelling))
            .unwrap_or_default();
        let path = if self.flag("fused") {
            FloatPath::Fused { soft: self.flag("soft") }
        } else if self.flag("soft") {
            FloatPath::Integer
        } else if self.flag("native") {
            FloatPath::Native
        } else {
            FloatPath::F64
        };
        let visible = self.flag("visible");
        FloatMode { ftz, sat, rounding, path, visible }
    }
}

impl KernelParser {
    pub(super) fn new(name: &str, span: Span) -> Self {
        KernelParser {
            k: Kernel::new(
                name.to_string(),
                span,
                KernelAbi { params: Vec::new(), size: 0, align: 1 },
            ),
            names: BTreeMap::new(),
            block_refs: Vec::new(),
            entry_span: None,
            function: None,
            stack_pointer: None,
            thread_regs: Vec::new(),
        }
    }

    /// Reads the header lines; returns the first line after them (a block, `body {`
    /// or the closing brace).
    pub(super) fn header<'t>(&mut self, lines: &mut Lines<'t>) -> Result<Line<'t>, Diagnostic> {
        for line in lines.by_ref() {
            if line.text == "}" || line.text == "body {" || Self::block_header(line.text).is_some()
            {
                return Ok(line);
            }
            if line.text.starts_with("entry ") {
                self.entry_span = Some(line.span);
            }
            self.header_line(line)?;
        }
        Err(self.unclosed())
    }

    pub(super) fn unclosed(&self) -> Diagnostic {
        Diagnostic::error(self.k.span, format!("kernel {} has no closing `}}`", self.k.name))
    }

    /// An instruction line, `polls ` marking a polling read.
    pub(super) fn inst_line(&mut self, line: Line<'_>) -> Result<Inst, Diagnostic> {
        let (polls, line) = match line.text.strip_prefix("polls ") {
            Some(rest) => (true, Line { text: rest, ..line }),
            None => (false, line),
        };
        let kind = self.inst(line)?;
        if polls {
            self.k.polling_reads.push(line.span);
        }
        Ok(Inst { kind, span: line.span })
    }

    fn parse(mut self, lines: &mut Lines<'_>) -> Result<Kernel, Diagnostic> {
        self.body(lines)?;
        // Every call names a function of the kernel.
        let bodies =
            std::iter::once(&self.k.blocks).chain(self.k.functions.iter().map(|f| &f.blocks));
        for inst in bodies.flatten().flat_map(|b| &b.insts) {
            for callee in inst.kind.callees() {
                if callee.index() >= self.k.functions.len() {
                    return Err(Diagnostic::error(
                        inst.span,
                        format!("no function fn{}", callee.0),
                    ));
                }
            }
        }
        Ok(self.k)
    }

    /// `function fnN NAME {`, its header (`entry`, `reg`, then `param TYPE REG` and
    /// `return TYPE REG` lines in order, and `stack REG` for its stack pointer) and
    /// blocks, up to its closing brace.
    fn function(&mut self, line: Line<'_>, lines: &mut Lines<'_>) -> Result<(), Diagnostic> {
        let bad = || line.error("expected `function fnN NAME {`");
        let rest = line.text.strip_prefix("function ").and_then(|r| r.strip_suffix('{'));
        let mut words = rest.ok_or_else(bad)?.split_whitespace();
        let index = words.next().and_then(|w| w.strip_prefix("fn")).and_then(number::<usize>);
        let (Some(index), Some(name), None) = (index, words.next(), words.next()) else {
            return Err(bad());
        };
        if index != self.k.functions.len() {
            return Err(line.error(format!(
                "functions must be numbered in order: expected fn{}",
                self.k.functions.len()
            )));
        }
        let mut p = KernelParser::new(name, line.span);
        p.function = Some((Vec::new(), Vec::new()));
        p.body(lines)?;
        let (params, returns) = p.function.unwrap_or_default();
        let stack_pointer = p.stack_pointer;
        let thread_regs = p
            .thread_regs
            .iter()
            .map(|(own, name, span)| Ok((*own, self.reg(Line { text: name, span: *span }, name)?)));
        let thread_regs = thread_regs.collect::<Result<_, Diagnostic>>()?;
        let k = p.k;
        self.k.functions.push(Function {
            routine: crate::ir::Routine::from_name(&k.name),
            name: k.name,
            span: k.span,
            params,
            returns,
            stack_pointer,
            thread_regs,
            regs: k.regs,
            blocks: k.blocks,
            entry: k.entry,
            body: Vec::new(),
        });
        Ok(())
    }

    /// The header and the blocks, up to the closing brace; in a kernel, its functions
    /// after its blocks.
    fn body(&mut self, lines: &mut Lines<'_>) -> Result<(), Diagnostic> {
        // Blocks until the closing brace.
        let mut open: Option<Block> = None;
        let mut line = self.header(lines)?;
        loop {
            if line.text == "}" {
                if let Some(b) = open.take() {
                    return Err(Diagnostic::error(b.span, "block has no terminator"));
                }
                break;
            }
            if line.text.starts_with("function ") && self.function.is_none() && open.is_none() {
                self.function(line, lines)?;
            } else if let Some((index, label)) = Self::block_header(line.text) {
                if let Some(b) = open.take() {
                    return Err(Diagnostic::error(b.span, "block has no terminator"));
                }
                if index != self.k.blocks.len() {
                    return Err(line.error(format!(
                        "blocks must be numbered in order: expected bb{}",
                        self.k.blocks.len()
                    )));
                }
                open = Some(Block {
                    label: label.map(str::to_string),
                    span: line.span,
                    insts: Vec::new(),
                    term: Terminator::Return,
                    term_span: line.span,
                });
            } else {
                let Some(block) = open.as_mut() else {
                    return Err(line.error("instruction outside a block"));
                };
                match self.terminator(line)? {
                    Some(term) => {
                        block.term = term;
                        block.term_span = line.span;
                        let done = open.take();
                        self.k.blocks.extend(done);
                    }
                    None => block.insts.push(self.inst_line(line)?),
                }
            }
            line = lines.next().ok_or_else(|| self.unclosed())?;
        }
        let blocks = self.k.blocks.len();
        let entry = self.entry_span.map(|s| (self.k.entry, s));
        for (b, span) in self.block_refs.iter().chain(entry.iter()) {
            if b.index() >= blocks {
                return Err(Diagnostic::error(*span, format!("no block bb{}", b.0)));
            }
        }
        if blocks == 0 {
            return Err(Diagnostic::error(self.k.span, "a kernel needs at least one block"));
        }
        Ok(())
    }

    /// `bbN:` or `bbN (label):`.
    pub(super) fn block_header(text: &str) -> Option<(usize, Option<&str>)> {
        let head = text.strip_suffix(':')?;
        let (id, label) = match head.split_once(' ') {
            Some((id, label)) => (id, Some(label.trim().strip_prefix('(')?.strip_suffix(')')?)),
            None => (head, None),
        };
        Some((id.strip_prefix("bb")?.parse().ok()?, label))
    }

    fn header_line(&mut self, line: Line<'_>) -> Result<(), Diagnostic> {
        let words: Vec<&str> = line.text.split_whitespace().collect();
        let bad = || line.error(format!("cannot read kernel header line `{}`", line.text));
        let num = |i: usize| words.get(i).and_then(|w| number::<u32>(w)).ok_or_else(bad);
        let at = |i: usize| {
            words.get(i).and_then(|w| w.strip_prefix('@')).and_then(number::<u32>).ok_or_else(bad)
        };
        let dims = || Ok::<_, Diagnostic>(Some([num(1)?, num(2)?, num(3)?]));
        if let (Some((params, returns)), ["param" | "return", ty, reg]) =
            (self.function.as_ref(), words.as_slice())
        {
            let ty = parse_op_ty(ty).ok_or_else(bad)?;
            let entry = (self.reg(line, reg)?, ty);
            let (mut params, mut returns) = (params.clone(), returns.clone());
            if words[0] == "param" {
                params.push(entry)
            } else {
                returns.push(entry)
            }
            self.function = Some((params, returns));
            return Ok(());
        }
        if let (Some(_), ["stack", reg]) = (self.function.as_ref(), words.as_slice()) {
            self.stack_pointer = Some(self.reg(line, reg)?);
            return Ok(());
        }
        // `thread REG KERNEL_REG`, resolved in the kernel's names after the function.
        if let (Some(_), ["thread", reg, kernel_reg]) = (self.function.as_ref(), words.as_slice()) {
            self.thread_regs.push((self.reg(line, reg)?, kernel_reg.to_string(), line.span));
            return Ok(());
        }
        match words[0] {
            "params" if words.get(1) == Some(&"size") && words.get(3) == Some(&"align") => {
                self.k.abi.size = num(2)?;
                self.k.abi.align = num(4)?;
            }
            "param" if words.len() == 9 => {
                let elem = ScalarType::from_directive(words[2]).ok_or_else(bad)?;
                let count = words[3].strip_prefix('x').and_then(number::<u32>).ok_or_else(bad)?;
                self.k.abi.params.push(ParamSlot {
                    name: words[1].to_string(),
                    elem,
                    count,
                    offset: at(4)?,
                    size: num(6)?,
                    align: num(8)?,
                });
            }
            "shared" => {
                self.k.shared.static_bytes = num(1)?;
                let mut i = 2;
                if words.get(i) == Some(&"align") {
                    self.k.shared.dynamic_align = Some(num(i + 1)?);
                    i += 2;
                }
                if words.get(i) == Some(&"word") {
                    self.k.shared.word = SharedWord::of_bits(num(i + 1)?).ok_or_else(bad)?;
                    i += 2;
                }
                if words.get(i) == Some(&"in_device_memory") {
                    self.k.shared.in_device_memory = true;
                    i += 1;
                }
                if i != words.len() {
                    return Err(bad());
                }
            }
            "shared_var" if words.len() == 4 => {
                self.k.shared.variables.push((words[1].to_string(), at(2)?, num(3)?));
            }
            "local" => self.k.local_bytes = num(1)?,
            "variable" => {
                let v = super::variable::parse_variable(&words).ok_or_else(bad)?;
                self.k.variables.push(v);
            }
            "reqntid" => self.k.reqntid = dims()?,
            "maxntid" => self.k.maxntid = dims()?,
            "maxnreg" => self.k.maxnreg = Some(num(1)?),
            "grid_sync" => self.k.grid_sync = true,
            "explicit_cluster" => self.k.explicit_cluster = true,
            "grid_phases" if words.len() == 4 => {
                self.k.grid_phases = Some(crate::ir::GridPhases {
                    record_bytes: num(1)?,
                    barriers: num(2)?,
                    in_loop: num(3)? != 0,
                });
            }
            "address_size" => self.k.address_size = num(1)?,
            "system" => self.k.system = true,
            "heap" => self.k.heap = true,
            "device_launches" if words.len() >= 2 => {
                self.k.device_launches = words[1..].iter().map(|w| w.to_string()).collect();
            }
            "warp_scratch" => self.k.warp_scratch = Some(num(1)?),
            "block_vote" => self.k.block_vote = Some(num(1)?),
            "entry" => {
                let b = words.get(1).and_then(|w| w.strip_prefix("bb")).and_then(number::<u32>);
                self.k.entry = BlockId(b.ok_or_else(bad)?);
            }
            "reg" if words.len() >= 3 => {
                let ty = parse_reg_ty(words[1]).ok_or_else(bad)?;
                for name in &words[2..] {
                    if !(name.starts_with('%') || name.starts_with('$')) {
                        return Err(line.error(format!("register `{name}` must start with % or $")));
                    }
                    let id = RegId(self.k.regs.len() as u32);
                    if self.names.insert(name.to_string(), id).is_some() {
                        return Err(line.error(format!("register `{name}` is declared twice")));
                    }
                    // The `#id` suffix only tells equal names apart in the text.
                    let base = name.split_once('#').map_or(*name, |(n, _)| n);
                    self.k.regs.push(RegInfo { name: base.to_string(), ty, span: line.span });
                }
            }
            _ => return Err(bad()),
        }
        Ok(())
    }

    pub(super) fn reg(&self, line: Line<'_>, s: &str) -> Result<RegId, Diagnostic> {
        self.names.get(s).copied().ok_or_else(|| line.error(format!("undeclared register `{s}`")))
    }

    fn value(&self, line: Line<'_>, s: &str) -> Result<Value, Diagnostic> {
        if s.starts_with('%') || s.starts_with('$') {
            return self.reg(line, s).map(Value::Reg);
        }
        number::<u64>(s).map(Value::Imm).ok_or_else(|| line.error(format!("bad operand `{s}`")))
    }

    pub(super) fn pred(&self, line: Line<'_>, s: &str) -> Result<(RegId, bool), Diagnostic> {
        match s.strip_prefix('!') {
            Some(r) => Ok((self.reg(line, r)?, true)),
            None => Ok((self.reg(line, s)?, false)),
        }
    }

    fn dst(&self, line: Line<'_>, s: &str) -> Result<Option<RegId>, Diagnostic> {
        if s == "_" {
            Ok(None)
        } else {
            self.reg(line, s).map(Some)
        }
    }

    fn addr(&self, line: Line<'_>, s: &str) -> Result<Address, Diagnostic> {
        let inner = s
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or_else(|| line.error(format!("expected an address `[...]`, found `{s}`")))?;
        let bad = || line.error(format!("bad address `{s}`"));
        let offset = |t: &str, negative: bool| {
            let v: i64 = number::<u64>(t).and_then(|v| i64::try_from(v).ok()).ok_or_else(bad)?;
            Ok::<_, Diagnostic>(if negative { -v } else { v })
        };
        if inner.starts_with('%') || inner.starts_with('$') {
            let split = inner.find(['+', '-']);
            let (base, off) = match split {
                Some(i) => (&inner[..i], offset(&inner[i + 1..], &inner[i..=i] == "-")?),
                None => (inner, 0),
            };
            Ok(Address { base: Some(self.reg(line, base)?), offset: off })
        } else {
            match inner.strip_prefix('-') {
                Some(n) => Ok(Address { base: None, offset: offset(n, true)? }),
                None => Ok(Address { base: None, offset: offset(inner, false)? }),
            }
        }
    }

    fn block_ref(&mut self, line: Line<'_>, s: &str) -> Result<BlockId, Diagnostic> {
        let b = s
            .strip_prefix("bb")
            .and_then(number::<u32>)
            .map(BlockId)
            .ok_or_else(|| line.error(format!("expected a block `bbN`, found `{s}`")))?;
        self.block_refs.push((b, line.span));
        Ok(b)
    }

    fn terminator(&mut self, line: Line<'_>) -> Result<Option<Terminator>, Diagnostic> {
        let (word, rest) = line.text.split_once(' ').unwrap_or((line.text, ""));
        let ops = split_operands(rest);
        let arity = |n: usize| {
            if ops.len() == n {
                Ok(())
            } else {
                Err(line.error(format!("`{word}` takes {n} operand(s)")))
            }
        };
        Ok(Some(match word {
            "return" => {
                arity(0)?;
                Terminator::Return
            }
            "jump" => {
                arity(1)?;
                Terminator::Jump(self.block_ref(line, ops[0])?)
            }
            "branch" => {
                arity(3)?;
                let (cond, negate) = self.pred(line, ops[0])?;
                let if_true = self.block_ref(line, ops[1])?;
                let if_false = self.block_ref(line, ops[2])?;
                Terminator::Branch { cond, negate, if_true, if_false }
            }
            "switch" => {
                // `switch %s [v: bbN, ...], bbD`
                let bad = || line.error("expected `switch %sel [V: bbN, ...], bbD`");
                let (sel, rest) = rest.split_once(' ').ok_or_else(bad)?;
                let selector = self.reg(line, sel)?;
                let (list, default) = rest.rsplit_once("],").ok_or_else(bad)?;
                let list = list.trim().strip_prefix('[').ok_or_else(bad)?;
                let mut cases = Vec::new();
                for case in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                    let (v, b) = case.split_once(':').ok_or_else(bad)?;
                    let v = number::<u32>(v.trim()).ok_or_else(bad)?;
                    cases.push((v, self.block_ref(line, b.trim())?));
                }
                let default = self.block_ref(line, default.trim())?;
                Terminator::Switch { selector, cases, default }
            }
            _ => return Ok(None),
        }))
    }

    fn inst(&self, line: Line<'_>) -> Result<InstKind, Diagnostic> {
        let (lhs, rhs) = match line.text.split_once(" = ") {
            Some((l, r)) => (Some(l), r),
            None => (None, line.text),
        };
        let dsts: Vec<&str> =
            lhs.map(|l| l.split(',').map(str::trim).collect()).unwrap_or_default();
        let (mnemonic, rest) = rhs.split_once(' ').unwrap_or((rhs, ""));
        let ops = split_operands(rest);
        let mut words = mnemonic.split('.');
        let opcode = words.next().unwrap_or("");
        let mut m = Modifiers { words: words.collect() };
        let kind = self.inst_kind(line, opcode, &mut m, &dsts, &ops)?;
        if !m.words.is_empty() {
            return Err(line.error(format!(
                "`{opcode}` does not take the modifier(s) .{}",
                m.words.join(".")
            )));
        }
        Ok(kind)
    }

    fn inst_kind(
        &self,
        line: Line<'_>,
        opcode: &str,
        m: &mut Modifiers<'_>,
        dsts: &[&str],
        ops: &[&str],
    ) -> Result<InstKind, Diagnostic> {
        let o = Operands { p: self, line, opcode, dsts, ops };
        if let Some(kind) = o.arithmetic(m)? {
            return Ok(kind);
        }
        if let Some(kind) = o.conversion_or_memory(m)? {
            return Ok(kind);
        }
        // The high-level operations (`text/video.rs`, `text/half.rs`, `text/integer.rs`,
        // `text/texture.rs`, `text/matrix.rs`, `text/copy.rs`, `text/mbarrier.rs`, `text/warp.rs`,
        // `text/system.rs`, `text/stack.rs`).
        let op_line = super::video::Line {
            opcode,
            dsts,
            ops,
            reg: |s: &str| self.reg(line, s),
            value: |s: &str| self.value(line, s),
            error: |message: String| line.error(message),
        };
        if let Some(op) = super::video::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::Video(Box::new(op)));
        }
        if let Some(op) = super::half::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::Half(Box::new(op)));
        }
        if let Some(c) = super::half::parse_convert(&op_line, &mut m.words)? {
            return Ok(InstKind::HalfConvert(Box::new(c)));
        }
        if let Some(op) = super::integer::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::Integer(Box::new(op)));
        }
        if let Some(t) = super::texture::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::Texture(Box::new(t)));
        }
        let addr = |s: &str| self.addr(line, s);
        if let Some(m) = super::matrix::parse(&op_line, &mut m.words, addr)? {
            return Ok(InstKind::Matrix(Box::new(m)));
        }
        if let Some(c) = super::copy::parse(&op_line, &mut m.words, addr)? {
            return Ok(InstKind::Copy(Box::new(c)));
        }
        if let Some(op) = super::mbarrier::parse(&op_line, &mut m.words, addr)? {
            return Ok(InstKind::Mbarrier(Box::new(op)));
        }
        if let Some(kind) = super::warp::parse(&op_line, &mut m.words)? {
            return Ok(kind);
        }
        if let Some(kind) = super::system::parse(&op_line, &mut m.words, addr)? {
            return Ok(kind);
        }
        if let Some(st) = super::stack::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::Stack(Box::new(st)));
        }
        if let Some(a) = super::variable::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::VariableAddress(a));
        }
        if let Some(a) = super::data_address::parse(&op_line, &mut m.words)? {
            return Ok(InstKind::DataAddress(a));
        }
        o.collective(m)
    }
}

/// An instruction line's parts, read by [`KernelParser::inst_kind`]'s helpers.
struct Operands<'p, 'l> {
    p: &'p KernelParser,
    line: Line<'l>,
    opcode: &'l str,
    dsts: &'l [&'l str],
    ops: &'l [&'l str],
}

impl Operands<'_, '_> {
    fn shape(&self, nd: usize, no: usize) -> Result<(), Diagnostic> {
        if self.dsts.len() == nd && self.ops.len() == no {
            Ok(())
        } else {
            Err(self.line.error(format!(
                "`{}` takes {nd} destination(s) and {no} operand(s), found {} and {}",
                self.opcode,
                self.dsts.len(),
                self.ops.len()
            )))
        }
    }

    fn ty(&self, m: &mut Modifiers<'_>) -> Result<OpTy, Diagnostic> {
        m.ty().ok_or_else(|| self.line.error(format!("`{}` needs an operation type", self.opcode)))
    }

    fn missing(&self, what: &str) -> Diagnostic {
        self.line.error(format!("`{}` needs {what}", self.opcode))
    }

    fn reg(&self, s: &str) -> Result<RegId, Diagnostic> {
        self.p.reg(self.line, s)
    }

    fn val(&self, s: &str) -> Result<Value, Diagnostic> {
        self.p.value(self.line, s)
    }

    fn vals(&self, ss: &[&str]) -> Result<Vec<Value>, Diagnostic> {
        ss.iter().map(|s| self.val(s)).collect()
    }

    fn dst_list(&self) -> Result<Vec<Option<RegId>>, Diagnostic> {
        self.dsts.iter().map(|d| self.p.dst(self.line, d)).collect()
    }

    /// `call_indirect TARGET, [ADDRESS fnN (ARGS) -> (RESULTS)], ...` ([`CallArm`]).
    fn call_indirect(&self) -> Result<InstKind, Diagnostic> {
        let bad = || self.missing("a target and arms `[ADDRESS fnN (ARGS) -> (RESULTS)]`");
        let ([target, arms @ ..], []) = (self.ops, self.dsts) else { return Err(bad()) };
        fn list(s: &str) -> Vec<&str> {
            s.split(',').map(str::trim).filter(|x| !x.is_empty()).collect()
        }
        let mut out = Vec::new();
        for arm in arms {
            let inner = arm.strip_prefix('[').and_then(|a| a.strip_suffix(']')).ok_or_else(bad)?;
            let (address, rest) = inner.split_once(' ').ok_or_else(bad)?;
            let (callee, rest) = rest.trim().split_once(' ').ok_or_else(bad)?;
            let operands = rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')'));
            let (args, results) = operands.and_then(|o| o.split_once(") -> (")).ok_or_else(bad)?;
            out.push(CallArm {
                address: number(address).ok_or_else(bad)?,
                callee: FunctionId(callee.strip_prefix("fn").and_then(number).ok_or_else(bad)?),
                args: self.vals(&list(args))?,
                results: list(results)
                    .into_iter()
                    .map(|r| self.reg(r))
                    .collect::<Result<_, _>>()?,
            });
        }
        Ok(InstKind::CallIndirect { target: self.val(target)?, arms: out })
    }

    /// `isspace.SPACE.TYPE a{, BYTES}` ([`IsSpaceInst`]).
    fn isspace(&self, m: &mut Modifiers<'_>) -> Result<InstKind, Diagnostic> {
        let spaces = ["global", "const", "shared", "local", "param"];
        let name = m.take(|w| spaces.into_iter().find(|s| *s == w));
        let name = name.ok_or_else(|| self.missing("a state space"))?;
        // `.global`, `.const` and `.param` name their bytes.
        let sized = matches!(name, "global" | "const" | "param");
        self.shape(1, 1 + usize::from(sized))?;
        let bytes = match sized {
            true => number::<u32>(self.ops[1]).ok_or_else(|| self.missing("a byte count"))?,
            false => 0,
        };
        let space = match name {
            "global" => SpaceTest::Global { const_bytes: bytes },
            "const" => SpaceTest::Const { const_bytes: bytes },
            "shared" => SpaceTest::Shared,
            "local" => SpaceTest::Local,
            _ => SpaceTest::Param { bytes },
        };
        let (ty, dst, addr) = (self.ty(m)?, self.reg(self.dsts[0])?, self.val(self.ops[0])?);
        Ok(InstKind::IsSpace(IsSpaceInst { space, ty, dst, addr }))
    }

    /// Unary and binary operations, moves, integer and float arithmetic, comparisons.
    fn arithmetic(&self, m: &mut Modifiers<'_>) -> Result<Option<InstKind>, Diagnostic> {
        let o = self;
        if let Some(op) = UnaryOp::from_spelling(o.opcode) {
            o.shape(1, 1)?;
            let mode = m.mode("");
            return Ok(Some(InstKind::Unary {
                op,
                ty: o.ty(m)?,
                mode,
                dst: o.reg(o.dsts[0])?,
                src: o.val(o.ops[0])?,
            }));
        }
        if let Some(op) = BinaryOp::from_spelling(o.opcode) {
            o.shape(1, 2)?;
            let mode = m.mode("");
            return Ok(Some(InstKind::Binary {
                op,
                ty: o.ty(m)?,
                mode,
                dst: o.reg(o.dsts[0])?,
                lhs: o.val(o.ops[0])?,
                rhs: o.val(o.ops[1])?,
            }));
        }
        Ok(Some(match o.opcode {
            "mov" => {
                o.shape(1, 1)?;
                InstKind::Mov { ty: o.ty(m)?, dst: o.reg(o.dsts[0])?, src: o.val(o.ops[0])? }
            }
            "cvta" => {
                o.shape(1, 1)?;
                let to = m.flag("to");
                let spaces = [
                    CvtaSpace::Global,
                    CvtaSpace::Shared,
                    CvtaSpace::Local,
                    CvtaSpace::Param,
                    CvtaSpace::CallParam,
                ];
                let space = m.take(|w| spaces.into_iter().find(|s| s.name() == w));
                let space = space.ok_or_else(|| o.missing("a state space"))?;
                InstKind::Cvta {
                    space,
                    to,
                    ty: o.ty(m)?,
                    dst: o.reg(o.dsts[0])?,
                    src: o.val(o.ops[0])?,
                }
            }
            "isspace" => o.isspace(m)?,
            "pack" => {
                if o.dsts.len() != 1 {
                    return Err(o.missing("one destination"));
                }
                InstKind::Pack { elem: o.ty(m)?, dst: o.reg(o.dsts[0])?, srcs: o.vals(o.ops)? }
            }
            "unpack" => {
                if o.ops.len() != 1 {
                    return Err(o.missing("one operand"));
                }
                InstKind::Unpack { elem: o.ty(m)?, dsts: o.dst_list()?, src: o.val(o.ops[0])? }
            }
            "special" => {
                o.shape(1, 0)?;
                let name = m.words.join(".");
                m.words.clear();
                let reg_kind = SpecialReg::from_spelling(&name)
                    .ok_or_else(|| o.line.error(format!("unknown special register `{name}`")))?;
                InstKind::Special { dst: o.reg(o.dsts[0])?, reg: reg_kind }
            }
            "mad" => {
                o.shape(1, 3)?;
                let part =
                    m.first(parse_mad_part).ok_or_else(|| o.missing("a part (.lo, .hi, .wide)"))?;
                InstKind::Mad {
                    part,
                    ty: o.ty(m)?,
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    b: o.val(o.ops[1])?,
                    c: o.val(o.ops[2])?,
                }
            }
            "bfe" => {
                o.shape(1, 3)?;
                InstKind::Bfe {
                    ty: o.ty(m)?,
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    pos: o.val(o.ops[1])?,
                    len: o.val(o.ops[2])?,
                }
            }
            "bfi" => {
                o.shape(1, 4)?;
                InstKind::Bfi {
                    ty: o.ty(m)?,
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    b: o.val(o.ops[1])?,
                    pos: o.val(o.ops[2])?,
                    len: o.val(o.ops[3])?,
                }
            }
            "fma" => {
                o.shape(1, 3)?;
                let mode = m.mode("");
                InstKind::Fma {
                    ty: o.ty(m)?,
                    mode,
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    b: o.val(o.ops[1])?,
                    c: o.val(o.ops[2])?,
                }
            }
            "setp" => {
                let cmp = m.take(CmpOp::from_spelling).ok_or_else(|| o.missing("a comparison"))?;
                let ftz = m.flag("ftz");
                let combine_op = m.take(BoolOp::from_spelling);
                o.shape(2, if combine_op.is_some() { 3 } else { 2 })?;
                let combine = match combine_op {
                    Some(op) => {
                        let (p, negate) = o.p.pred(o.line, o.ops[2])?;
                        Some((op, p, negate))
                    }
                    None => None,
                };
                InstKind::Setp {
                    cmp,
                    ty: o.ty(m)?,
                    ftz,
                    dst: o.p.dst(o.line, o.dsts[0])?,
                    dst_not: o.p.dst(o.line, o.dsts[1])?,
                    lhs: o.val(o.ops[0])?,
                    rhs: o.val(o.ops[1])?,
                    combine,
                }
            }
            "selp" => {
                o.shape(1, 3)?;
                let (cond, negate) = o.p.pred(o.line, o.ops[2])?;
                InstKind::Select {
                    ty: o.ty(m)?,
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    b: o.val(o.ops[1])?,
                    cond,
                    negate,
                }
            }
            "pand" | "por" | "pxor" => {
                o.shape(1, 2)?;
                let op = BoolOp::from_spelling(&o.opcode[1..])
                    .ok_or_else(|| o.missing("an operation"))?;
                InstKind::PredLogic {
                    op,
                    dst: o.reg(o.dsts[0])?,
                    lhs: o.reg(o.ops[0])?,
                    rhs: o.reg(o.ops[1])?,
                }
            }
            "pnot" => {
                o.shape(1, 1)?;
                InstKind::PredNot { dst: o.reg(o.dsts[0])?, src: o.reg(o.ops[0])? }
            }
            "cvt" => {
                o.shape(1, 1)?;
                let rounding = m.take(Rounding::from_spelling);
                let mode = m.mode("mode_");
                let to = o.ty(m)?;
                let from = o.ty(m)?;
                InstKind::Convert {
                    to,
                    from,
                    rounding,
                    mode,
                    dst: o.reg(o.dsts[0])?,
                    src: o.val(o.ops[0])?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// An atomic's operation, space, scope and order.
    fn atomic(&self, m: &mut Modifiers<'_>) -> Result<(AtomicOp, Space, Scope, Order), Diagnostic> {
        let o = self;
        let op = m.first(AtomicOp::from_spelling).ok_or_else(|| o.missing("an operation"))?;
        let space = m.take(Space::from_spelling).ok_or_else(|| o.missing("a state space"))?;
        let scope = m.take(Scope::from_spelling).ok_or_else(|| o.missing("a scope"))?;
        let order = m.take(Order::from_spelling).ok_or_else(|| o.missing("an order"))?;
        Ok((op, space, scope, order))
    }

    /// Conversions, loads, stores and atomics.
    fn conversion_or_memory(&self, m: &mut Modifiers<'_>) -> Result<Option<InstKind>, Diagnostic> {
        let o = self;
        Ok(Some(match o.opcode {
            "load" => {
                if o.ops.len() != 1 || o.dsts.is_empty() {
                    return Err(o.missing("destinations and one address"));
                }
                let space =
                    m.take(Space::from_spelling).ok_or_else(|| o.missing("a state space"))?;
                InstKind::Load {
                    space,
                    ty: o.ty(m)?,
                    dsts: o.dst_list()?,
                    addr: o.p.addr(o.line, o.ops[0])?,
                }
            }
            "store" => {
                if o.ops.len() < 2 || !o.dsts.is_empty() {
                    return Err(o.missing("an address and values, and no destination"));
                }
                let space =
                    m.take(Space::from_spelling).ok_or_else(|| o.missing("a state space"))?;
                InstKind::Store {
                    space,
                    ty: o.ty(m)?,
                    srcs: o.vals(&o.ops[1..])?,
                    addr: o.p.addr(o.line, o.ops[0])?,
                }
            }
            "narrow" => {
                o.shape(1, 1)?;
                let to =
                    m.first(FloatFormat::from_spelling).ok_or_else(|| o.missing("a format"))?;
                let rounding =
                    m.take(Rounding::from_spelling).ok_or_else(|| o.missing("a rounding"))?;
                let satfinite = m.flag("satfinite");
                let relu = m.flag("relu");
                InstKind::Narrow {
                    to,
                    from: o.ty(m)?,
                    rounding,
                    satfinite,
                    relu,
                    dst: o.reg(o.dsts[0])?,
                    src: o.val(o.ops[0])?,
                }
            }
            "itof" => {
                o.shape(1, 1)?;
                let to =
                    m.first(FloatFormat::from_spelling).ok_or_else(|| o.missing("a format"))?;
                let rounding =
                    m.take(Rounding::from_spelling).ok_or_else(|| o.missing("a rounding"))?;
                InstKind::IntToFloat {
                    to,
                    from: o.ty(m)?,
                    rounding,
                    dst: o.reg(o.dsts[0])?,
                    src: o.val(o.ops[0])?,
                }
            }
            "widen" => {
                o.shape(1, 1)?;
                let from =
                    m.first(FloatFormat::from_spelling).ok_or_else(|| o.missing("a format"))?;
                InstKind::Widen { from, dst: o.reg(o.dsts[0])?, src: o.val(o.ops[0])? }
            }
            "round_odd" => {
                o.shape(1, 3)?;
                let op = m.take(OddOp::from_spelling).ok_or_else(|| o.missing("an operation"))?;
                InstKind::RoundToOdd {
                    op,
                    soft: m.flag("soft"),
                    dst: o.reg(o.dsts[0])?,
                    a: o.val(o.ops[0])?,
                    b: o.val(o.ops[1])?,
                    c: o.val(o.ops[2])?,
                }
            }
            "atom" => {
                if o.dsts.len() > 1 || o.ops.len() != 3 {
                    return Err(o.missing("at most one destination, an address and two values"));
                }
                let (op, space, scope, order) = o.atomic(m)?;
                InstKind::Atomic {
                    op,
                    space,
                    ty: o.ty(m)?,
                    scope,
                    order,
                    dst: o.dsts.first().map(|d| o.reg(d)).transpose()?,
                    addr: o.p.addr(o.line, o.ops[0])?,
                    src: o.val(o.ops[1])?,
                    cmp: o.val(o.ops[2])?,
                }
            }
            "vatom" => {
                if o.ops.len() < 4 || o.dsts.len() != o.ops.len() - 2 {
                    return Err(o.missing(
                        "a destination per value, an address, a value to compare and values",
                    ));
                }
                let (op, space, scope, order) = o.atomic(m)?;
                InstKind::VectorAtomic(Box::new(VectorAtomic {
                    op,
                    space,
                    ty: o.ty(m)?,
                    scope,
                    order,
                    dsts: o.dst_list()?,
                    addr: o.p.addr(o.line, o.ops[0])?,
                    srcs: o.vals(&o.ops[2..])?,
                    cmp: o.val(o.ops[1])?,
                }))
            }
            _ => return Ok(None),
        }))
    }

    /// Barriers, warp and subgroup operations, and the passes' own instructions.
    fn collective(&self, m: &mut Modifiers<'_>) -> Result<InstKind, Diagnostic> {
        let o = self;
        Ok(match o.opcode {
            "barrier" => {
                o.shape(0, 0)?;
                InstKind::Barrier
            }
            "end_thread" => {
                o.shape(0, 0)?;
                InstKind::EndThread
            }
            "subgroup" => {
                o.shape(1, 2)?;
                let op =
                    m.take(SubgroupOp::from_spelling).ok_or_else(|| o.missing("an operation"))?;
                let split = m.flag("split");
                InstKind::Subgroup {
                    op,
                    split,
                    dst: o.reg(o.dsts[0])?,
                    value: o.val(o.ops[0])?,
                    lane: o.val(o.ops[1])?,
                }
            }
            "warp_barrier" => {
                if !o.dsts.is_empty() || o.ops.len() > 1 {
                    return Err(o.missing("no destination and at most one operand"));
                }
                InstKind::WarpBarrier { publish: o.ops.first().map(|s| o.val(s)).transpose()? }
            }
            "fence" => {
                o.shape(0, 0)?;
                let device_scope = match m.take(Scope::from_spelling) {
                    Some(Scope::Cta) => false,
                    Some(Scope::Gpu) => true,
                    _ => return Err(o.missing("a scope (.cta or .gpu)")),
                };
                InstKind::Fence { device_scope }
            }
            "warp_publish" => {
                o.shape(0, 1)?;
                InstKind::WarpPublish { value: o.val(o.ops[0])? }
            }
            "warp_read" => {
                o.shape(1, 3)?;
                InstKind::WarpRead {
                    dst: o.reg(o.dsts[0])?,
                    value: o.val(o.ops[0])?,
                    lane: o.val(o.ops[1])?,
                    warp_base: o.val(o.ops[2])?,
                }
            }
            "warp_ballot" => {
                o.shape(1, 3)?;
                InstKind::WarpBallot {
                    dst: o.reg(o.dsts[0])?,
                    value: o.val(o.ops[0])?,
                    lanes: o.val(o.ops[1])?,
                    warp_base: o.val(o.ops[2])?,
                }
            }
            "warp_sync" => {
                o.shape(0, 0)?;
                InstKind::WarpSync
            }
            "sync_point" if m.flag("warp") => {
                o.shape(0, 2)?;
                // The kind is an instruction's spelling (`ir::sync`), one word.
                let kind = WarpSyncKind::new(o.ops[1]);
                if !kind.is_spelling() {
                    return Err(o.line.error("`sync_point.warp` takes an instruction's spelling"));
                }
                InstKind::SyncPoint { point: SyncPoint::Warp { members: o.val(o.ops[0])?, kind } }
            }
            "sync_point" if m.flag("sleep") => {
                o.shape(0, 0)?;
                InstKind::SyncPoint { point: SyncPoint::Sleep }
            }
            "sync_point" if m.flag("acquire") => {
                o.shape(0, 0)?;
                InstKind::SyncPoint { point: SyncPoint::Acquire }
            }
            "loop_count" => {
                o.shape(1, 1)?;
                let add = o.ops[0]
                    .parse::<i32>()
                    .map_err(|_| o.line.error("`loop_count` takes a signed 32-bit count"))?;
                InstKind::LoopCount { dst: o.reg(o.dsts[0])?, add }
            }
            "race_shadow" => {
                let swap = m.flag("swap");
                o.shape(1, 1 + usize::from(swap))?;
                InstKind::RaceShadow {
                    dst: o.reg(o.dsts[0])?,
                    word: o.val(o.ops[0])?,
                    swap: if swap { Some(o.val(o.ops[1])?) } else { None },
                }
            }
            "call" => {
                let callee = m
                    .first(|w| w.strip_prefix("fn").and_then(number::<u32>))
                    .ok_or_else(|| o.missing("a function `.fnN`"))?;
                let results = o.dsts.iter().map(|d| o.reg(d)).collect::<Result<_, _>>()?;
                InstKind::Call { callee: FunctionId(callee), args: o.vals(o.ops)?, results }
            }
            "call_indirect" => o.call_indirect()?,
            other => return Err(o.line.error(format!("unknown IR instruction `{other}`"))),
        })
    }
}
