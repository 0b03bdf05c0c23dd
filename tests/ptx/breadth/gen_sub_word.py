#!/usr/bin/env python3
"""Writes sub_word.ptx: every sub-word store and load (8 and 16 bits; .u, .s, .b)
from and into registers of 16, 32 and 64 bits (PTX ISA 9.2 §5.2.2: ld, st and cvt
take registers wider than their type; a store keeps the low bits, a load sign- or
zero-extends by the type), in shared, global and local memory and through generic
addresses into each, and the 16-bit atomics (atom.cas.b16, atom.add.noftz.f16) in
shared, global and generic memory. The expected values are modelled in
tests/breadth_e2e.rs.

Each thread t of one block owns a 16-byte slot at SLOT(t) = 16*t of its space. It
reads x = in[t] (u64) and stores, then loads, as STORES and LOADS below list; out
gets, per thread, the two u64 words of the slot and one u64 per load (the loaded
register zero-extended from its width, so a sign extension into it shows).

Run it from this directory: python3 gen_sub_word.py > sub_word.ptx
"""

# (type, offset, source register width): the source is x >> (4 * offset) held in a
# register of that width (its low bits are what a store keeps).
STORES = [
    ("u8", 0, 16), ("s8", 1, 32), ("b8", 2, 64), ("u8", 3, 32),
    ("u16", 4, 16), ("s16", 6, 32), ("b16", 8, 64),
    ("s8", 10, 64), ("b8", 11, 16), ("u16", 12, 64), ("b16", 14, 32),
]
# (type, offset, destination register width)
LOADS = [
    ("s8", 0, 16), ("u8", 1, 32), ("s8", 2, 64), ("s8", 3, 32), ("u8", 0, 64),
    ("s16", 4, 32), ("u16", 6, 64), ("s16", 8, 64), ("b16", 12, 32), ("s16", 14, 16),
    ("b8", 11, 64), ("s8", 10, 16), ("u16", 14, 16),
]
# Byte- and half-dominated shapes for shared memory: there the compiler makes the
# shared window an array of bytes or of halves (legalize_memory's typed_shared_word),
# whose stores from wider registers must first drop the high bits.
BYTE_STORES = [(("u8", "s8", "b8")[j % 3], j, (16, 32, 64)[j % 3]) for j in range(12)]
BYTE_STORES += [("u16", 12, 32), ("b16", 14, 64)]
BYTE_LOADS = [("s8", 0, 16), ("u8", 1, 32), ("s8", 2, 64), ("b8", 3, 16), ("s8", 15, 32), ("u8", 14, 64)]
HALF_STORES = [(("u16", "s16", "b16")[j % 3], 2 * j, (16, 32, 64)[j % 3]) for j in range(8)]
HALF_LOADS = [("s16", 0, 16), ("u16", 2, 32), ("s16", 4, 64), ("b16", 6, 64), ("s16", 14, 32)]
LAYOUTS = {"": (STORES, LOADS), "_bytes": (BYTE_STORES, BYTE_LOADS), "_halves": (HALF_STORES, HALF_LOADS)}
WORDS = 2 + len(LOADS)

REG = {16: "%rs", 32: "%r", 64: "%rd"}


def preamble():
    """Registers; %rd1 = in, %rd2 = out, %r1 = t, %rd5 = x = in[t]."""
    return [
        "  .reg .pred %p<4>;",
        "  .reg .b16 %rs<60>;",
        "  .reg .b32 %r<60>;",
        "  .reg .b64 %rd<60>;",
        "  ld.param.u64 %rd1, [in];",
        "  ld.param.u64 %rd2, [out];",
        "  cvta.to.global.u64 %rd1, %rd1;",
        "  cvta.to.global.u64 %rd2, %rd2;",
        "  mov.u32 %r1, %tid.x;",
        "  mul.wide.u32 %rd3, %r1, 8;",
        "  add.u64 %rd4, %rd1, %rd3;",
        "  ld.global.u64 %rd5, [%rd4];",
    ]


def kernel(name, space, how, stores=STORES, loads=LOADS):
    """how: 'direct' (ld.space/st.space on the slot), or 'generic' (the slot's generic
    address from cvta, plain ld/st)."""
    q = "" if how == "generic" else "." + space
    lines = [f".visible .entry {name}(.param .u64 in, .param .u64 out)", "{"]
    if space == "shared":
        lines.append("  .shared .align 16 .b8 slots[1024];")
    if space == "local":
        lines.append("  .local .align 16 .b8 slots[16];")
    lines += [
        *preamble(),
        f"  mul.wide.u32 %rd6, %r1, {8 * (2 + len(loads))};",
        "  add.u64 %rd7, %rd2, %rd6;",  # this thread's out words
    ]
    # %rd8: the slot address
    if space == "shared":
        lines += ["  mul.wide.u32 %rd9, %r1, 16;", "  mov.u64 %rd10, slots;", "  add.u64 %rd8, %rd10, %rd9;"]
        if how == "generic":
            lines.append("  cvta.shared.u64 %rd8, %rd8;")
    elif space == "local":
        lines.append("  mov.u64 %rd8, slots;")
        if how == "generic":
            lines.append("  cvta.local.u64 %rd8, %rd8;")
    else:  # global: a scratch area after the out words of 64 threads
        lines += [
            f"  add.u64 %rd10, %rd2, {64 * 8 * WORDS};",
            "  mul.wide.u32 %rd9, %r1, 16;",
            "  add.u64 %rd8, %rd10, %rd9;",
        ]
    # The store sources: x >> 8*off in registers of each width.
    k = 20
    for ty, off, width in stores:
        lines.append(f"  shr.u64 %rd{k}, %rd5, {4 * off};")
        src = f"%rd{k}"
        if width == 32:
            lines.append(f"  cvt.u32.u64 %r{k}, %rd{k};")
            src = f"%r{k}"
        elif width == 16:
            lines.append(f"  cvt.u16.u64 %rs{k}, %rd{k};")
            src = f"%rs{k}"
        lines.append(f"  st{q}.{ty} [%rd8+{off}], {src};")
        k += 1
    lines += [
        f"  ld{q}.v2.u64 {{%rd11, %rd12}}, [%rd8];",
        "  st.global.u64 [%rd7], %rd11;",
        "  st.global.u64 [%rd7+8], %rd12;",
    ]
    for j, (ty, off, width) in enumerate(loads):
        dst = f"{REG[width]}{k}"
        lines.append(f"  ld{q}.{ty} {dst}, [%rd8+{off}];")
        if width == 16:
            lines.append(f"  cvt.u64.u16 %rd{k}, {dst};")
        elif width == 32:
            lines.append(f"  cvt.u64.u32 %rd{k}, {dst};")
        lines.append(f"  st.global.u64 [%rd7+{8 * (2 + j)}], %rd{k};")
        k += 1
    lines += ["  ret;", "}", ""]
    return "\n".join(lines)


def atomics(name, space, how):
    """Thread t of 64: a 16-bit CAS-loop increment of counter t % 2 of a pair of
    adjacent u16 counters (each ends at 32; a CAS that wrote the whole word would lose
    the neighbour's counts), an atom.cas.b16 that fails (compare value wrong) and one
    that succeeds on its own u16, and atom.add.noftz.f16 of 1.0 into an f16 pair.
    out (u64 per thread): old value of the failing CAS, old value of the succeeding CAS,
    the u16 after it; then, from thread 0 after a barrier: counter 0, counter 1, the
    f16 pair's bits."""
    q = "" if how == "generic" else "." + space
    lines = [f".visible .entry {name}(.param .u64 in, .param .u64 out)", "{"]
    if space == "shared":
        lines.append("  .shared .align 8 .b8 cells[256];")
    lines += [
        *preamble(),
        "  cvt.u16.u64 %rs1, %rd5;",  # own u16 initial value (low 16 bits of x)
    ]
    # %rd8: the cells: [0..4) counters, [4..8) f16 pair, [8 + 2t] thread t's u16
    if space == "shared":
        lines.append("  mov.u64 %rd8, cells;")
        if how == "generic":
            lines.append("  cvta.shared.u64 %rd8, %rd8;")
    else:
        lines.append("  add.u64 %rd8, %rd2, 2048;")
    lines += [
        "  mul.wide.u32 %rd9, %r1, 2;",
        "  add.u64 %rd10, %rd8, %rd9;",
        "  setp.ne.u32 %p1, %r1, 0;",
        f"  @!%p1 st{q}.u32 [%rd8], 0;",
        f"  @!%p1 st{q}.u32 [%rd8+4], 0;",
        f"  st{q}.u16 [%rd10+8], %rs1;",
        "  bar.sync 0;",
        # counter t % 2: CAS loop
        "  and.b64 %rd11, %rd9, 2;",
        "  add.u64 %rd12, %rd8, %rd11;",
        "LOOP:",
        f"  ld{q}.volatile.u16 %rs2, [%rd12];",
        "  add.u16 %rs3, %rs2, 1;",
        f"  atom{q}.cas.b16 %rs4, [%rd12], %rs2, %rs3;",
        "  setp.ne.u16 %p2, %rs4, %rs2;",
        "  @%p2 bra LOOP;",
        # a failing CAS (compare with the value plus one) and a succeeding one
        "  add.u16 %rs5, %rs1, 1;",
        "  xor.b16 %rs6, %rs1, 0x5a5a;",
        f"  atom{q}.cas.b16 %rs7, [%rd10+8], %rs5, %rs6;",
        f"  atom{q}.cas.b16 %rs8, [%rd10+8], %rs1, %rs6;",
        # f16 adds: 1.0 (0x3c00) to the low half, 0.5 (0x3800) to the high half
        "  mov.b16 %rs9, 0x3c00;",
        "  mov.b16 %rs10, 0x3800;",
        f"  atom{q}.add.noftz.f16 %rs11, [%rd8+4], %rs9;",
        f"  atom{q}.add.noftz.f16 %rs12, [%rd8+6], %rs10;",
        "  bar.sync 0;",
        f"  ld{q}.u16 %rs13, [%rd10+8];",
        "  mul.wide.u32 %rd13, %r1, 24;",
        "  add.u64 %rd14, %rd2, %rd13;",
        "  cvt.u64.u16 %rd15, %rs7;",
        "  st.global.u64 [%rd14], %rd15;",
        "  cvt.u64.u16 %rd15, %rs8;",
        "  st.global.u64 [%rd14+8], %rd15;",
        "  cvt.u64.u16 %rd15, %rs13;",
        "  st.global.u64 [%rd14+16], %rd15;",
        "  @%p1 bra DONE;",
        f"  ld{q}.u16 %rs14, [%rd8];",
        f"  ld{q}.u16 %rs15, [%rd8+2];",
        f"  ld{q}.u32 %r2, [%rd8+4];",
        "  cvt.u64.u16 %rd15, %rs14;",
        "  st.global.u64 [%rd2+1536], %rd15;",
        "  cvt.u64.u16 %rd15, %rs15;",
        "  st.global.u64 [%rd2+1544], %rd15;",
        "  cvt.u64.u32 %rd15, %r2;",
        "  st.global.u64 [%rd2+1552], %rd15;",
        "DONE:",
        "  ret;",
        "}",
        "",
    ]
    return "\n".join(lines)


print("// Generated by gen_sub_word.py; do not edit.")
print(".version 7.8")
print(".target sm_80")
print(".address_size 64")
print()
for space in ["shared", "global", "local"]:
    for how in ["direct", "generic"]:
        print(kernel(f"sub_word_{space}_{how}", space, how))
for layout in ["_bytes", "_halves"]:
    for how in ["direct", "generic"]:
        print(kernel(f"sub_word_shared{layout}_{how}", "shared", how, *LAYOUTS[layout]))
for space in ["shared", "global"]:
    for how in ["direct", "generic"]:
        print(atomics(f"sub_word_atomics_{space}_{how}", space, how))
