//! The structurizer on small hand-written CFGs: the structure it produces for each
//! shape, dispatchers included (irreducible cycles, several loop exits, short-circuit
//! conditions).

fn structure(body: &str) -> Result<String, String> {
    let text = format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 n)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\nld.param.u32 %r1, [n];\n{body}\n}}\n"
    );
    let module = ptxvk_frontend::parse(&text).map_err(|d| format!("{:?}", d.0))?;
    let lowered = ptxvk_lower::lower(&module)
        .map_err(|d| d.0.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))?;
    let k = &lowered[0];
    // Keep only the shape: drop instruction counts.
    Ok(ptxvk_lower::pass::structurize::print(&k.kernel, &k.body)
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
        mov.u32 %r3, %r2;
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
        mov.u32 %r3, %r2;
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
fn early_return_with_code_is_the_loop_exit_and_plain_returns_return_in_place() {
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
    assert_eq!(
        s,
        ".entry k {
    block bb0
    loop { // continue target: loop header
        block HEAD
        if %p2 {
            break
        } // merge
        block bb3
        if %p1 {
            continue
        } // merge
        return
    } // merge (loop exit)
    block EARLY
    return
}"
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
        mov.u32 %r3, %r2;
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
            && s.contains("return"),
        "{s}"
    );
}

#[test]
fn an_irreducible_cycle_gets_a_dispatcher_header() {
    // A and B form a cycle entered at both: the dispatcher switch becomes its header.
    let s = structure(
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
    .unwrap();
    assert_eq!(s.matches("loop {").count(), 1, "{s}");
    let in_loop = &s[s.find("loop {").unwrap()..];
    assert!(in_loop.contains("switch $sel"), "{s}");
    assert_eq!(s.matches("block A").count(), 1, "no code is duplicated:\n{s}");
    assert_eq!(s.matches("block B").count(), 1, "no code is duplicated:\n{s}");
}

#[test]
fn a_loop_with_two_exits_gets_a_dispatcher_after_it() {
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
    let after_loop = &s[s.find("} // merge (loop exit)").unwrap()..];
    assert!(after_loop.contains("switch $sel"), "{s}");
    assert_eq!(s.matches("block Y").count(), 1, "the shared tail is not duplicated:\n{s}");
}

#[test]
fn an_inner_loop_with_two_exits_into_the_outer_loop() {
    // The inner loop leaves to X or to Z, and both continue the outer loop.
    let s = structure(
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
    .unwrap();
    assert_eq!(s.matches("loop {").count(), 2, "{s}");
    assert!(s.contains("switch $sel"), "{s}");
    assert_eq!(s.matches("block Z").count(), 1, "{s}");
}

#[test]
fn short_circuit_conditions_share_their_else_block_through_a_dispatcher() {
    // if (a && b) X else Y: Y is reached from both tests.
    let s = structure(
        "setp.eq.s32 %p1, %r1, 0;
        @!%p1 bra Y;
        setp.eq.s32 %p2, %r1, 1;
        @!%p2 bra Y;
        add.u32 %r2, %r1, 1;
        bra.uni J;
    Y:
        add.u32 %r2, %r1, 2;
    J:
        mov.u32 %r3, %r2;
        ret;",
    )
    .unwrap();
    assert_eq!(s.matches("block Y").count(), 1, "{s}");
    assert_eq!(s.matches("block J").count(), 1, "{s}");
    assert!(s.contains("switch $sel"), "{s}");
}
