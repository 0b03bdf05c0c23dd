//! The first structurizer on small hand-written CFGs: the structure it produces for each
//! supported shape, and its diagnostics for the shapes it rejects.

fn structure(body: &str) -> Result<String, String> {
    let text = format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 n)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\nld.param.u32 %r1, [n];\n{body}\n}}\n"
    );
    let module = ptxvk_frontend::parse(&text).map_err(|d| format!("{:?}", d.0))?;
    let lowered = ptxvk_lower::lower(&module)
        .map_err(|d| d.0.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))?;
    let k = &lowered[0];
    // Keep only the shape: drop instruction counts.
    Ok(ptxvk_lower::structurize::print(&k.kernel, &k.body)
        .lines()
        .map(|l| match l.find(": ") {
            Some(i) if l.trim_start().starts_with("block") => l[..i].to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

#[test]
fn if_else_diamond_merges_at_the_post_dominator() {
    let s = structure(
        "setp.eq.s32 %p1, %r1, 0;
        @%p1 bra ELSE;
        add.s32 %r2, %r1, 1;
        bra.uni JOIN;
    ELSE:
        add.s32 %r2, %r1, 2;
    JOIN:
        ret;",
    )
    .unwrap();
    assert_eq!(
        s,
        ".entry k {
    block bb0
    if %p1 {
        block ELSE
    } else {
        block bb3
    } // merge
    block JOIN
    return
}"
    );
}

#[test]
fn while_loop_with_exit_at_the_header() {
    let s = structure(
        "mov.u32 %r2, 0;
    HEAD:
        setp.ge.u32 %p1, %r2, %r1;
        @%p1 bra DONE;
        add.u32 %r2, %r2, 1;
        bra.uni HEAD;
    DONE:
        ret;",
    )
    .unwrap();
    assert_eq!(
        s,
        ".entry k {
    block bb0
    loop { // continue target: loop header
        block HEAD
        if %p1 {
            break
        } // merge
        block bb3
        continue
    } // merge (loop exit)
    block DONE
    return
}"
    );
}

#[test]
fn early_return_inside_a_loop_is_duplicated_in_place() {
    let s = structure(
        "mov.u32 %r2, 0;
    HEAD:
        setp.eq.u32 %p2, %r2, 7;
        @%p2 bra EARLY;
        add.u32 %r2, %r2, 1;
        setp.lt.u32 %p1, %r2, %r1;
        @%p1 bra HEAD;
        ret;
    EARLY:
        mov.u32 %r3, 1;
        ret;",
    )
    .unwrap();
    assert!(s.contains("loop {"), "{s}");
    let in_loop = &s[s.find("loop {").unwrap()..s.find("} // merge (loop exit)").unwrap()];
    assert!(
        in_loop.contains("block EARLY") && in_loop.contains("return"),
        "the early return belongs in the loop:\n{s}"
    );
}

#[test]
fn inner_loop_exiting_to_the_outer_header_continues_the_outer_loop() {
    let s = structure(
        "mov.u32 %r2, 0;
    OUTER:
        setp.ge.u32 %p1, %r2, %r1;
        @%p1 bra DONE;
        add.u32 %r2, %r2, 1;
        mov.u32 %r3, 0;
    INNER:
        add.u32 %r3, %r3, 1;
        setp.lt.u32 %p2, %r3, %r2;
        @%p2 bra INNER;
        bra.uni OUTER;
    DONE:
        ret;",
    )
    .unwrap();
    assert_eq!(s.matches("loop {").count(), 2, "{s}");
    assert!(s.contains("continue"), "{s}");
}

#[test]
fn a_self_loop_is_a_loop() {
    let s = structure(
        "mov.u32 %r2, 0;
    SELF:
        add.u32 %r2, %r2, 1;
        setp.lt.u32 %p1, %r2, %r1;
        @%p1 bra SELF;
        ret;",
    )
    .unwrap();
    assert!(
        s.contains("loop {")
            && s.contains("block SELF")
            && s.contains("continue")
            && s.contains("break"),
        "{s}"
    );
}

#[test]
fn irreducible_cycles_are_rejected_with_a_diagnostic() {
    let e = structure(
        "setp.eq.s32 %p1, %r1, 0;
        @%p1 bra B;
    A:
        add.u32 %r2, %r2, 1;
        setp.lt.u32 %p2, %r2, %r1;
        @%p2 bra B;
        ret;
    B:
        add.u32 %r3, %r3, 1;
        setp.lt.u32 %p3, %r3, %r1;
        @%p3 bra A;
        ret;",
    )
    .unwrap_err();
    assert!(e.contains("irreducible"), "{e}");
}

#[test]
fn loop_exits_that_only_return_are_duplicated() {
    // Both exits of the loop end in `ret` through the shared tail Y: Y is duplicated.
    let s = structure(
        "mov.u32 %r2, 0;
    HEAD:
        add.u32 %r2, %r2, 1;
        setp.eq.u32 %p1, %r2, 5;
        @%p1 bra X;
        setp.lt.u32 %p2, %r2, %r1;
        @%p2 bra HEAD;
        bra.uni Y;
    X:
        mov.u32 %r3, 1;
    Y:
        add.u32 %r4, %r3, %r2;
        ret;",
    )
    .unwrap();
    assert_eq!(s.matches("block Y").count(), 2, "{s}");
}

#[test]
fn loops_with_two_continuing_exits_are_rejected_with_a_diagnostic() {
    // The inner loop leaves to X or to Z, and both continue the outer loop.
    let e = structure(
        "mov.u32 %r2, 0;
    OUTER:
        add.u32 %r2, %r2, 1;
        mov.u32 %r3, 0;
    INNER:
        add.u32 %r3, %r3, 1;
        setp.eq.u32 %p1, %r3, 5;
        @%p1 bra X;
        setp.lt.u32 %p2, %r3, %r2;
        @%p2 bra INNER;
        bra.uni Z;
    X:
        add.u32 %r4, %r4, 1;
    Z:
        setp.lt.u32 %p3, %r2, %r1;
        @%p3 bra OUTER;
        ret;",
    )
    .unwrap_err();
    assert!(e.contains("several exits"), "{e}");
}
