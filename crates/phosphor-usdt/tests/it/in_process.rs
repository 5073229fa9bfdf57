//! The macros' behaviour inside a program, with the semaphore set by the test as a tool would.

use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};

use phosphor_usdt::{sdt, sdt_declare_semaphore, sdt_define_semaphore, sdt_enabled, sdt_with_semaphore};

sdt_define_semaphore!(in_process, gated);

/// Another module's view of the same semaphore.
mod other {
    phosphor_usdt::sdt_declare_semaphore!(in_process, gated);

    pub fn enabled() -> bool {
        phosphor_usdt::sdt_enabled!(in_process, gated)
    }
}

sdt_declare_semaphore!(in_process, gated);

/// The semaphore as a tool sees it: the `u16` at the symbol `sys/sdt.h` would name.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
fn attach(delta: i16) {
    extern "C" {
        #[link_name = "in_process_gated_semaphore"]
        static SEMAPHORE: AtomicU16;
    }
    // SAFETY: the symbol is the `Semaphore` defined above, a `u16` with the layout of `AtomicU16`.
    let s = unsafe { &SEMAPHORE };
    // Relaxed: the test's own thread reads it next.
    s.fetch_add(delta as u16, Ordering::Relaxed);
}

static EVALUATED: AtomicU32 = AtomicU32::new(0);

fn costly() -> u64 {
    // Relaxed: a tally read by this thread.
    EVALUATED.fetch_add(1, Ordering::Relaxed);
    99
}

#[test]
fn sdt_enabled_follows_the_semaphore_and_gates_the_arguments() {
    assert!(!sdt_enabled!(in_process, gated));
    sdt_with_semaphore!(in_process, gated, costly());
    assert_eq!(EVALUATED.load(Ordering::Relaxed), 0, "not evaluated while nothing is attached");

    if !phosphor_usdt::SUPPORTED {
        return;
    }
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
    {
        attach(1);
        assert!(sdt_enabled!(in_process, gated));
        assert!(other::enabled(), "another module sees the same semaphore");
        sdt_with_semaphore!(in_process, gated, costly(), 1u8);
        assert_eq!(EVALUATED.load(Ordering::Relaxed), 1, "evaluated once while attached");
        attach(1);
        attach(-1);
        assert!(sdt_enabled!(in_process, gated), "still one tool attached");
        attach(-1);
        assert!(!sdt_enabled!(in_process, gated));
        assert!(!other::enabled());
    }
}

#[test]
fn probes_take_every_argument_type_up_to_twelve_arguments() {
    let x = 5u32;
    let s = "text";
    let p: *mut u8 = std::ptr::null_mut();
    sdt!(in_process, none);
    sdt!(in_process, trailing_comma, 1,);
    sdt!(in_process, refs, &x, s, p, std::ptr::NonNull::from(&x), 'c', x == 5);
    sdt!(in_process, twelve, 1i8, 2i16, 3i32, 4i64, 5u8, 6u16, 7u32, 8u64, 9isize, 10usize, true, &x);
    phosphor_usdt::__sdt_str_probe!(phosphor, "", "only name", x);
}

/// A probe in generic code: the argument's type is the caller's type parameter.
fn generic<T: phosphor_usdt::SdtArg>(x: T) {
    sdt!(in_process, generic, x);
}

#[test]
fn probes_in_generic_code_take_the_instantiated_type() {
    generic(1u8);
    generic(-1i64);
    let reference: &u16 = &0;
    generic(reference);
}

/// The Phosphor bridge's shape: a string-named probe behind a semaphore of its own.
#[test]
fn a_local_semaphore_gates_a_string_named_probe() {
    phosphor_usdt::__sdt_local_semaphore!(SITE);
    let mut evaluated = 0;
    let mut fire = || {
        if SITE.is_enabled() {
            evaluated += 1;
            phosphor_usdt::__sdt_str_probe!(@semaphore SITE, phosphor, "cat", "name", evaluated);
        }
    };
    fire();
    // As a tool would: `Semaphore` is a transparent `AtomicU16`.
    let counter = (&SITE as *const phosphor_usdt::Semaphore).cast::<AtomicU16>();
    // SAFETY: the cast keeps the address and the layout (`#[repr(transparent)]`); only shared
    // references to the atomic exist.
    let counter = unsafe { &*counter };
    // Relaxed: read back by this thread.
    counter.fetch_add(1, Ordering::Relaxed);
    fire();
    assert_eq!(evaluated, 1, "evaluated once, while attached");
}
