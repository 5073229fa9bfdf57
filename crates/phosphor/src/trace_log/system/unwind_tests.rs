use super::*;

#[test]
fn executable_file_mappings_and_the_vdso_are_modules_with_their_inode() {
    let x = "55d0c000-55d0d000 r-xp 00001000 08:01 1234                       /usr/bin/cat";
    let line = parse_line(x).unwrap();
    assert_eq!(
        line,
        MapLine {
            start: 0x55d0c000,
            end: 0x55d0d000,
            file_offset: 0x1000,
            inode: 1234,
            path: "/usr/bin/cat".into()
        }
    );
    let vdso = "7ffc1000-7ffc3000 r-xp 00000000 00:00 0                          [vdso]";
    assert_eq!(parse_line(vdso).map(|l| l.path), Some("[vdso]".into()));
    assert_eq!(parse_line("55d0c000-55d0d000 r--p 00000000 08:01 1234 /usr/bin/cat"), None);
    assert_eq!(parse_line("7f00000-7f01000 rwxp 00000000 00:00 0 "), None, "anonymous code (a JIT's)");
    assert_eq!(parse_line("7f00000-7f01000 r-xp 00000000 00:00 0 [vsyscall]"), None);
    assert_eq!(parse_line("garbage"), None);
}

#[test]
fn the_test_binary_is_a_module_with_its_unwind_sections_within_the_budget() {
    let u = StackUnwinder::new();
    let here = the_test_binary_is_a_module_with_its_unwind_sections_within_the_budget as fn() as usize as u64;
    assert!(u.knows(here), "{u:?} does not know {here:#x}");
    assert!(u.bytes() > 0 && u.bytes() <= MAX_UNWIND_BYTES, "{} bytes", u.bytes());
}

/// The executable's function symbols, by address (as the object says), with their sizes.
fn symbols() -> Vec<(u64, u64, String)> {
    use object::ObjectSymbol;
    let data = std::fs::read("/proc/self/exe").unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut out: Vec<_> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_owned())))
        .collect();
    out.sort();
    out
}

/// The function holding object address `a`.
fn function_at(symbols: &[(u64, u64, String)], a: u64) -> Option<&str> {
    let at = symbols.partition_point(|s| s.0 <= a).checked_sub(1)?;
    let (start, size, name) = &symbols[at];
    (a < start + size).then_some(name.as_str())
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod live {
    use super::*;

    /// The registers of `REGS_MASK` as this function has them, and a copy of this thread's stack
    /// from its stack pointer up (at most `STACK_BYTES`, and not past the stack's end), as the
    /// kernel gives them with a sample.
    #[inline(never)]
    fn capture() -> (Vec<u64>, Vec<u8>) {
        let regs = registers();
        let sp = regs[if cfg!(target_arch = "x86_64") { 1 } else { 2 }];
        let top = stack_top();
        let len = (top - sp).min(u64::from(STACK_BYTES)) as usize;
        // SAFETY: `sp..sp + len` is this thread's stack, below its top (`stack_top`), live for
        // the copy: the frames of this function and its callers.
        let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, len) }.to_vec();
        (regs, stack)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn registers() -> Vec<u64> {
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers into locals; no memory is touched.
        unsafe {
            std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp", ip = out(reg) ip, sp = out(reg) sp, bp = out(reg) bp, options(nomem, nostack, preserves_flags));
        }
        vec![bp, sp, ip]
    }

    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    fn registers() -> Vec<u64> {
        let (pc, sp, fp, lr): (u64, u64, u64, u64);
        // SAFETY: reads four registers into locals; no memory is touched.
        unsafe {
            std::arch::asm!("adr {pc}, .", "mov {sp}, sp", "mov {fp}, x29", "mov {lr}, x30", pc = out(reg) pc, sp = out(reg) sp, fp = out(reg) fp, lr = out(reg) lr, options(nomem, nostack, preserves_flags));
        }
        vec![fp, lr, sp, pc]
    }

    /// One past the highest address of this thread's stack.
    fn stack_top() -> u64 {
        // SAFETY: `attr` is initialised by pthread_getattr_np before it is read and destroyed
        // once; the pointers passed are to locals.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
            let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
            assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
            libc::pthread_attr_destroy(&mut attr);
            addr as u64 + size as u64
        }
    }

    macro_rules! chain {
        ($name:ident -> $next:ident) => {
            #[inline(never)]
            fn $name(depth: u32) -> (Vec<u64>, Vec<u8>) {
                let r = $next(std::hint::black_box(depth + 1));
                // Work after the call: it is not a tail call, so this frame stays.
                std::hint::black_box(depth);
                r
            }
        };
    }
    chain!(unwind_level_a -> unwind_level_b);
    chain!(unwind_level_b -> unwind_level_c);
    chain!(unwind_level_c -> unwind_level_d);
    chain!(unwind_level_d -> unwind_level_e);

    #[inline(never)]
    fn unwind_level_e(_: u32) -> (Vec<u64>, Vec<u8>) {
        let r = capture();
        std::hint::black_box(&r);
        r
    }

    #[test]
    fn a_stack_copy_unwinds_through_every_caller_to_the_test() {
        let (regs, stack) = unwind_level_a(0);
        let mut u = StackUnwinder::new();
        let mut frames = Vec::new();
        u.unwind(&regs, &stack, &[], &mut frames);
        assert_eq!(u.counts, UnwindCounts { unwound: 1, kernel: 0 });
        let symbols = symbols();
        let anchor =
            symbols.iter().find(|s| s.2.contains("unwind_level_e")).expect("unwind_level_e's symbol");
        let bias = (unwind_level_e as fn(u32) -> (Vec<u64>, Vec<u8>) as usize as u64).wrapping_sub(anchor.0);
        // The first frame is the instruction; the others return addresses, inside their call.
        let names: Vec<String> = frames
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let a = a.wrapping_sub(bias).wrapping_sub(u64::from(i > 0));
                function_at(&symbols, a).map_or(format!("{a:#x}"), |n| format!("{:#}", demangled(n)))
            })
            .collect();
        let want = [
            "capture",
            "unwind_level_e",
            "unwind_level_d",
            "unwind_level_c",
            "unwind_level_b",
            "unwind_level_a",
            "a_stack_copy_unwinds",
        ];
        let mut at = 0;
        for w in want {
            let found = names[at..].iter().position(|n| n.contains(w));
            at += found.unwrap_or_else(|| panic!("{w} not in order in {names:#?}")) + 1;
        }
        assert!(frames.len() <= MAX_FRAMES);
    }

    fn demangled(name: &str) -> String {
        // Legacy and v0 Rust symbols both keep the function's name as a plain substring.
        name.to_owned()
    }

    #[test]
    fn a_walk_shorter_than_the_kernels_chain_gives_way_to_it_and_a_stack_is_never_past_max_frames() {
        let mut u = StackUnwinder::new();
        let mut frames = Vec::new();
        // No stack copy: the walk stops at the first frame, the kernel's chain has three.
        let (regs, _) = capture();
        u.unwind(&regs, &[], &[1, 2, 3], &mut frames);
        assert_eq!(frames, [1, 2, 3]);
        assert_eq!(u.counts, UnwindCounts { unwound: 0, kernel: 1 });
        let long: Vec<u64> = (1..=500).collect();
        u.unwind(&regs, &[], &long, &mut frames);
        assert_eq!(frames.len(), MAX_FRAMES);
    }
}
