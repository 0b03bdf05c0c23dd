//! Decoding an instruction's modifiers into typed values, once, against its row of the
//! instruction table ([`crate::instructions`]).
//!
//! The parser has already decoded the opcode ([`Instruction::op`]) and checked every
//! modifier's spelling and the operands against the row. [`decode`] checks the operand
//! count once more, so that its callers may index the operands the row requires
//! whatever produced the AST. [`decode`] sorts the modifiers into their
//! classes ([`ModifierClass`]): types, a state space, a vector size, a rounding mode,
//! `.ftz`, `.sat`, a comparison, a predicate combine and a half of a product. A modifier
//! whose class the row does not list is an error at its span (`` `max` does not take
//! `.sat` ``), and so is a second modifier of one class (`.rn.rz`). Every other modifier
//! belongs to one of the families the row lists ([`crate::modifier`]: cache operators,
//! memory orders and scopes, `.cc`, `.uni`, shuffle and vote modes, texture geometries,
//! matrix shapes and layouts, copy forms, …) and is decoded into its typed value
//! ([`Modifiers::details`]); one of no family of its row is an error at its span
//! (`` unknown or unsupported modifier `.acq_rel` for `ld` ``). Nothing after decoding
//! compares modifier text.
//!
//! `.lo` and `.hi` are halves of a product for instructions that take
//! [`ModifierClass::MulPart`] and unsigned comparisons for the others (`setp.lo.u32`).

use crate::ast::{Instruction, ScalarType, StateSpace};
use crate::diagnostic::Diagnostic;
use crate::instructions::{ModifierClass, Opcode};
use crate::modifier::Modifier;
use crate::span::Spanned;

/// A rounding modifier (PTX ISA 9.2 §9.7.9.21): the direction, and whether it is the
/// integer form (`.rni`, `.rzi`, `.rmi`, `.rpi`) that rounds to an integral value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounding {
    pub direction: Direction,
    pub integer: bool,
}

/// The direction of a [`Rounding`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `.rn`, `.rni`: to nearest, ties to even.
    Nearest,
    /// `.rz`, `.rzi`.
    Zero,
    /// `.rm`, `.rmi`: toward negative infinity.
    Down,
    /// `.rp`, `.rpi`: toward positive infinity.
    Up,
}

/// A comparison (PTX ISA 9.2 §9.7.7.1, Tables 21-22), decoded from `setp`, `set`,
/// `vset` and the like and carried unchanged into the IR (`lower::ir` re-exports it).
/// `.lo`, `.ls`, `.hi` and `.hs` are the unsigned spellings of `.lt`, `.le`, `.gt` and
/// `.ge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unordered variants (true when either float operand is NaN).
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    /// Both operands are numbers.
    Num,
    /// Either operand is NaN.
    Nan,
}

/// A predicate combine (`setp.lt.and`, `lop3.or`) or bitwise atomic (`atom.and`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// Which part of a product `mul`/`mad` keep (PTX ISA 9.2 §9.7.1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MulPart {
    Lo,
    Hi,
    Wide,
}

/// The decoded modifiers of one instruction.
#[derive(Clone, Debug)]
pub struct Modifiers {
    pub opcode: Opcode,
    /// Types in source order; they may repeat (`cvt.f32.s32`).
    pub types: Vec<Spanned<ScalarType>>,
    pub space: Option<Spanned<StateSpace>>,
    pub vector: Option<u32>,
    pub rounding: Option<Spanned<Rounding>>,
    pub ftz: bool,
    pub sat: bool,
    pub cmp: Option<CmpOp>,
    pub combine: Option<BoolOp>,
    pub mul_part: Option<Spanned<MulPart>>,
    /// The modifiers of the row's families ([`crate::modifier`]), in source order.
    pub details: Vec<Spanned<Modifier>>,
}

impl Modifiers {
    /// Whether the instruction has modifier `d`.
    pub fn has(&self, d: Modifier) -> bool {
        self.details.iter().any(|x| x.value == d)
    }

    /// The first modifier `f` picks out, with its span.
    pub fn find<T>(&self, f: impl Fn(Modifier) -> Option<T>) -> Option<Spanned<T>> {
        self.details.iter().find_map(|d| f(d.value).map(|v| Spanned::new(v, d.span)))
    }
}

/// The opcode and decoded modifiers of an instruction without their spans: two
/// instructions with equal qualifiers have "the same qualifiers" in the ISA's sense
/// (PTX ISA 9.2 §9.7.8.6, the `.sync` collectives), whatever their spellings
/// (`.shared::cta` is `.shared`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qualifiers {
    opcode: Opcode,
    types: Vec<ScalarType>,
    space: Option<StateSpace>,
    vector: Option<u32>,
    rounding: Option<Rounding>,
    ftz_sat: (bool, bool),
    cmp: Option<CmpOp>,
    combine: Option<BoolOp>,
    mul_part: Option<MulPart>,
    details: Vec<Modifier>,
}

impl Modifiers {
    /// The instruction's [`Qualifiers`].
    pub fn qualifiers(&self) -> Qualifiers {
        Qualifiers {
            opcode: self.opcode,
            types: self.types.iter().map(|t| t.value).collect(),
            space: self.space.as_ref().map(|s| s.value),
            vector: self.vector,
            rounding: self.rounding.as_ref().map(|r| r.value),
            ftz_sat: (self.ftz, self.sat),
            cmp: self.cmp,
            combine: self.combine,
            mul_part: self.mul_part.as_ref().map(|p| p.value),
            details: self.details.iter().map(|d| d.value).collect(),
        }
    }
}

/// The canonical spelling of the qualifiers: the opcode, then each decoded modifier
/// as PTX spells it, the family modifiers (in source order) first, then the state
/// space, the comparison, the combine, the product half, the rounding, `.ftz`, `.sat`,
/// the vector size and the types (in source order): `shfl.sync.idx.b32`,
/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`. For one opcode a spelling belongs to
/// one class, so two qualifiers are equal exactly when their spellings are.
impl std::fmt::Display for Qualifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.opcode)?;
        for d in &self.details {
            write!(f, "{d}")?;
        }
        let words = [
            self.space.map(StateSpace::directive),
            self.cmp.map(|c| spell_in(&COMPARISONS, &c)),
            self.combine.map(|c| spell_in(&COMBINES, &c)),
            self.mul_part.map(|p| spell_in(&MUL_PARTS, &p)),
            self.rounding.map(|r| spell_in(&ROUNDINGS, &r)),
            self.ftz_sat.0.then_some(".ftz"),
            self.ftz_sat.1.then_some(".sat"),
        ];
        for w in words.into_iter().flatten() {
            f.write_str(w)?;
        }
        if let Some(n) = self.vector {
            write!(f, ".v{n}")?;
        }
        for t in &self.types {
            f.write_str(t.directive())?;
        }
        Ok(())
    }
}

/// Decodes the modifiers of `i`; `None` when the opcode is not a PTX instruction.
pub fn decode(i: &Instruction) -> Result<Option<Modifiers>, Diagnostic> {
    let Some(opcode) = i.op else { return Ok(None) };
    opcode.spec().check_operand_count(i)?;
    let classes = opcode.spec().classes;
    let mut m = Modifiers {
        opcode,
        types: Vec::new(),
        space: None,
        vector: None,
        rounding: None,
        ftz: false,
        sat: false,
        cmp: None,
        combine: None,
        mul_part: None,
        details: Vec::new(),
    };
    let families = opcode.spec().families;
    let mut seen: Vec<(ModifierClass, &Spanned<crate::span::Name>)> = Vec::new();
    for md in &i.modifiers {
        let s = md.value.as_str();
        let class = if let Some(t) = ScalarType::from_directive(s) {
            m.types.push(Spanned::new(t, md.span));
            continue;
        } else if let Some(space) = StateSpace::from_directive(s).filter(|_| opcode != Opcode::Cp) {
            // `cp` names two state spaces, the destination's then the source's
            // (`cp.async.ca.shared.global`): they are its family `CopySpace`, in order
            // among its other modifiers.
            m.space = Some(Spanned::new(space, md.span));
            ModifierClass::Space
        } else if let Some(n) = s.strip_prefix(".v").and_then(|n| n.parse().ok()) {
            m.vector = Some(n);
            ModifierClass::Vector
        } else if let Some(r) = rounding(s) {
            m.rounding = Some(Spanned::new(r, md.span));
            ModifierClass::Rounding
        } else if s == ".ftz" {
            m.ftz = true;
            ModifierClass::Ftz
        } else if s == ".sat" {
            m.sat = true;
            ModifierClass::Sat
        } else if let Some(p) = mul_part(s).filter(|_| {
            classes.contains(&ModifierClass::MulPart) || !classes.contains(&ModifierClass::Cmp)
        }) {
            m.mul_part = Some(Spanned::new(p, md.span));
            ModifierClass::MulPart
        } else if let Some(c) = comparison(s) {
            m.cmp = Some(c);
            ModifierClass::Cmp
        } else if let Some(b) = combine(s) {
            m.combine = Some(b);
            ModifierClass::Combine
        } else if let Some(d) = families.iter().find_map(|f| f.parse(s)) {
            m.details.push(Spanned::new(d, md.span));
            continue;
        } else {
            return Err(Diagnostic::error(
                md.span,
                format!("unknown or unsupported modifier `{s}` for `{opcode}`"),
            ));
        };
        if !classes.contains(&class) {
            return Err(Diagnostic::error(md.span, format!("`{opcode}` does not take `{s}`")));
        }
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == class) {
            return Err(Diagnostic::error(
                md.span,
                format!("`{s}` conflicts with `{}` on `{opcode}`", first.value),
            ));
        }
        seen.push((class, md));
    }
    Ok(Some(m))
}

/// The rounding modifiers, as PTX spells them.
const ROUNDINGS: [(&str, Rounding); 8] = {
    const fn r(direction: Direction, integer: bool) -> Rounding {
        Rounding { direction, integer }
    }
    [
        (".rn", r(Direction::Nearest, false)),
        (".rz", r(Direction::Zero, false)),
        (".rm", r(Direction::Down, false)),
        (".rp", r(Direction::Up, false)),
        (".rni", r(Direction::Nearest, true)),
        (".rzi", r(Direction::Zero, true)),
        (".rmi", r(Direction::Down, true)),
        (".rpi", r(Direction::Up, true)),
    ]
};

/// The comparisons, as PTX spells them; a comparison's first spelling is the one
/// [`Qualifiers`] prints (`.lo` is `.lt`).
const COMPARISONS: [(&str, CmpOp); 18] = [
    (".eq", CmpOp::Eq),
    (".ne", CmpOp::Ne),
    (".lt", CmpOp::Lt),
    (".lo", CmpOp::Lt),
    (".le", CmpOp::Le),
    (".ls", CmpOp::Le),
    (".gt", CmpOp::Gt),
    (".hi", CmpOp::Gt),
    (".ge", CmpOp::Ge),
    (".hs", CmpOp::Ge),
    (".equ", CmpOp::Equ),
    (".neu", CmpOp::Neu),
    (".ltu", CmpOp::Ltu),
    (".leu", CmpOp::Leu),
    (".gtu", CmpOp::Gtu),
    (".geu", CmpOp::Geu),
    (".num", CmpOp::Num),
    (".nan", CmpOp::Nan),
];

/// The predicate combines, as PTX spells them.
const COMBINES: [(&str, BoolOp); 3] =
    [(".and", BoolOp::And), (".or", BoolOp::Or), (".xor", BoolOp::Xor)];

/// The product halves, as PTX spells them.
const MUL_PARTS: [(&str, MulPart); 3] =
    [(".lo", MulPart::Lo), (".hi", MulPart::Hi), (".wide", MulPart::Wide)];

/// The value of spelling `s` in `table`.
fn parse_in<T: Copy>(table: &[(&str, T)], s: &str) -> Option<T> {
    table.iter().find(|(spelling, _)| *spelling == s).map(|&(_, v)| v)
}

/// The first spelling of `v` in `table`.
fn spell_in<T: PartialEq>(table: &[(&'static str, T)], v: &T) -> &'static str {
    table.iter().find(|(_, x)| x == v).map_or("", |(spelling, _)| spelling)
}

fn rounding(s: &str) -> Option<Rounding> {
    parse_in(&ROUNDINGS, s)
}

fn comparison(s: &str) -> Option<CmpOp> {
    parse_in(&COMPARISONS, s)
}

fn combine(s: &str) -> Option<BoolOp> {
    parse_in(&COMBINES, s)
}

fn mul_part(s: &str) -> Option<MulPart> {
    parse_in(&MUL_PARTS, s)
}

/// The instruction of a kernel whose body is `line` (PTX 8.0, sm_90), for the tests of
/// the decoders and the forms.
#[cfg(test)]
pub(crate) fn test_instruction(line: &str) -> Result<crate::ast::Instruction, String> {
    use crate::ast::{Item, Statement};
    let src =
        format!(".version 8.0\n.target sm_90\n.address_size 64\n.entry k()\n{{\n\t{line}\n}}\n");
    let module = crate::parse(&src).map_err(|e| format!("{:?}", e.0))?;
    let Some(Item::Function(f)) = module.items.into_iter().next() else {
        return Err("no kernel".into());
    };
    match f.body.and_then(|b| b.into_iter().next()) {
        Some(Statement::Instruction(i)) => Ok(i),
        _ => Err("no instruction".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(line: &str) -> Result<Modifiers, String> {
        let i = test_instruction(line)?;
        decode(&i).map_err(|d| d.message).map(|m| m.expect("a PTX instruction"))
    }

    #[test]
    fn classes_follow_the_table() {
        let m = decoded("mul.hi.u32 %r1, %r2, %r3;").expect("decodes");
        assert_eq!(m.opcode, Opcode::Mul);
        assert_eq!(m.mul_part.map(|p| p.value), Some(MulPart::Hi));
        // `.hi` is an unsigned comparison for setp, which takes no product half.
        let m = decoded("setp.hi.u32 %p1, %r2, %r3;").expect("decodes");
        assert_eq!((m.cmp, m.mul_part), (Some(CmpOp::Gt), None));
        let m = decoded("cvt.rzi.f32.f32 %r1, %r2;").expect("decodes");
        let r = m.rounding.map(|r| r.value);
        assert_eq!(r, Some(Rounding { direction: Direction::Zero, integer: true }));
        assert_eq!(m.types.len(), 2);
        let m = decoded("ld.global.nc.v2.u32 {%r1, %r2}, [%rd1];").expect("decodes");
        let nc = Modifier::CacheOp(crate::modifier::CacheOp::Nc);
        assert_eq!((m.vector, m.details.iter().map(|d| d.value).collect()), (Some(2), vec![nc]));
    }

    #[test]
    fn an_unchecked_ast_gets_its_operand_count_checked() {
        // `parse_syntax` skips the table check; decoding must not trust the count.
        let src = ".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n\tadd.s32 %r1, %r2;\n}\n";
        let (module, errors) = crate::parse_syntax(src);
        assert!(errors.is_empty(), "{errors:?}");
        let crate::ast::Item::Function(f) = &module.items[0] else { unreachable!() };
        let Some(body) = &f.body else { unreachable!() };
        let crate::ast::Statement::Instruction(i) = &body[0] else { unreachable!() };
        let message = decode(i).err().map(|d| d.message);
        assert_eq!(message.as_deref(), Some("`add` takes 3 operands, found 2"));
    }

    #[test]
    fn families_follow_the_row() {
        use crate::modifier::{Component, CopyForm, CopySpace, MemoryOrder, Scope, SurfaceAccess};
        let values = |m: Modifiers| m.details.into_iter().map(|d| d.value).collect::<Vec<_>>();
        let m = decoded("ld.relaxed.gpu.global.u32 %r1, [%rd1];").expect("decodes");
        let strong = vec![Modifier::MemoryOrder(MemoryOrder::Relaxed), Modifier::Scope(Scope::Gpu)];
        assert_eq!(values(m), strong);
        // `.b` is an unformatted surface access on `suld` and the blue component on `tld4`
        // (PTX ISA 9.2 §9.7.11.1, §9.7.10.4): each row's families say which.
        let m = decoded("suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];").expect("decodes");
        assert!(m.has(Modifier::SurfaceAccess(SurfaceAccess::B)));
        let m = decoded("tld4.b.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%r5, %r6}];")
            .expect("decodes");
        assert!(m.has(Modifier::Component(Component::B)));
        // `cp` keeps its two state spaces in order, destination first.
        let m = decoded("cp.async.ca.shared.global [%r1], [%rd1], 4;").expect("decodes");
        let spaces: Vec<Modifier> =
            values(m).into_iter().filter(|d| matches!(d, Modifier::CopySpace(_))).collect();
        let shared_global = [CopySpace::Shared, CopySpace::Global].map(Modifier::CopySpace);
        assert_eq!(spaces, shared_global);
        let m = decoded("cp.async.wait_all;").expect("decodes");
        assert_eq!(values(m), [CopyForm::Async, CopyForm::WaitAll].map(Modifier::CopyForm));
    }

    #[test]
    fn a_modifier_of_no_family_of_its_row_is_rejected_at_decoding() {
        // The syntax of `st` allows `.async` (`st.async`, sm_90), but no family of its
        // row gives it a meaning.
        assert_eq!(
            decoded("st.async.shared::cluster.u32 [%r1], %r2, [%r3];").err().as_deref(),
            Some("unknown or unsupported modifier `.async` for `st`")
        );
        // `.u4` is a format, which `and` does not take.
        assert_eq!(
            decoded("and.u4 %r1, %r2, %r3;").err().as_deref(),
            Some("unknown or unsupported modifier `.u4` for `and`")
        );
    }

    #[test]
    fn modifiers_of_other_classes_and_repeats_are_rejected() {
        assert_eq!(
            decoded("max.sat.f32 %r1, %r2, %r3;").err().as_deref(),
            Some("`max` does not take `.sat`")
        );
        assert_eq!(
            decoded("add.rn.rz.f32 %r1, %r2, %r3;").err().as_deref(),
            Some("`.rz` conflicts with `.rn` on `add`")
        );
    }

    #[test]
    fn qualifiers_print_one_spelling_for_equal_qualifiers() {
        let spelled = |line: &str| decoded(line).expect("decodes").qualifiers().to_string();
        assert_eq!(spelled("shfl.sync.idx.b32 %r1, %r2, %r3, 31, -1;"), "shfl.sync.idx.b32");
        // `.shared::cta` is `.shared`, `.lo` on `setp` is `.lt` (PTX ISA 9.2 §9.7.7.1).
        let ld = spelled("ld.shared::cta.v2.u32 {%r1, %r2}, [%r3];");
        assert_eq!(ld, spelled("ld.shared.v2.u32 {%r1, %r2}, [%r3];"));
        assert_eq!(ld, "ld.shared.v2.u32");
        assert_eq!(spelled("setp.lo.and.u32 %p1, %r1, %r2, %p2;"), "setp.lt.and.u32");
        assert_eq!(spelled("cvt.rzi.ftz.sat.f32.f32 %r1, %r2;"), "cvt.rzi.ftz.sat.f32.f32");
        assert_eq!(spelled("mul.wide.u32 %rd1, %r1, %r2;"), "mul.wide.u32");
        assert_ne!(
            spelled("vote.sync.any.pred %p1, %p2, -1;"),
            spelled("vote.sync.all.pred %p1, %p2, -1;")
        );
    }
}
