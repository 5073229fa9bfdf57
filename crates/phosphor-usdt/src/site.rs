//! The probe site and the semaphore access, per target.
//!
//! # The note (x86-64 and AArch64 Linux)
//!
//! A probe site is one `nop` (label `990`; the mnemonic is the same on both architectures), and an entry appended to the section `.note.stapsdt`
//! in SystemTap's version 3 layout, which `readelf -n` decodes as `NT_STAPSDT`:
//!
//! ```text
//! namesz = 8, descsz, type = 3       three 4-byte words
//! "stapsdt\0"                        the owner, padded to 4 bytes
//! pc        8 bytes                  address of the nop (990b)
//! base      8 bytes                  link-time address of _.stapsdt.base
//! semaphore 8 bytes                  address of the semaphore, or 0
//! provider\0 name\0 args\0           args: "-4@%rax 8@%rcx ..." (x86-64), "-4@x0 8@x1 ..."
//!                                    (AArch64), one spec per argument
//! padding to 4 bytes
//! ```
//!
//! `pc`, `base` and `semaphore` are link-time addresses: the note is not loaded, so the dynamic
//! loader never relocates it. A tool computes the run-time address of a PIE or shared object from
//! its load bias, and corrects for prelink by comparing `base` with the address of the section
//! `.stapsdt.base` in the file. That section is one byte in a COMDAT group (one per program however
//! many objects define it), marked `SHF_GNU_RETAIN` (flag `R`): nothing loaded refers to it, so
//! without the flag the `--gc-sections` that rustc passes to the linker drops it, `base` becomes 0,
//! and gdb ignores every probe of the file.
//!
//! The note section has the flags `"?"`: it joins the COMDAT group of the function it is written
//! from, if any, so a discarded duplicate of an inline function takes its notes along.
//!
//! # Arguments
//!
//! Each argument is an `in(reg)` operand, its value extended to 64 bits
//! ([`SdtArg::into_word`](crate::SdtArg::into_word)); its spec is `SIZE@%reg`, the size coming from
//! a `const` operand, [`SdtArg::SPEC`](crate::SdtArg::SPEC) of the argument's type. The register
//! is printed as each architecture's `sys/sdt.h` prints it, which is what the tools parse: `%rax`
//! (AT&T syntax) on x86-64, `x0` on AArch64. Because a `const` operand may not name local
//! variables, the asm sits in a small generic function, `#[inline(always)]`, defined by each
//! expansion: the type parameters carry the argument types to the `const` operands, and inlining
//! puts the `nop` in the caller (in debug builds too).
//!
//! # Other targets
//!
//! The macros type-check their arguments inside `if false { .. }` and evaluate nothing; the
//! semaphores do not exist and `sdt_enabled!` is `false`.

/// Whether this target gets probes: x86-64 and AArch64 Linux. Elsewhere the macros compile to
/// nothing.
pub const SUPPORTED: bool =
    cfg!(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"));

/// Internal: one probe site, from the pairs made by `__sdt_zip!`. On x86-64 the operands are
/// printed in AT&T syntax (`%rax`), as SystemTap's x86 argument parser reads them.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_site {
    ($($site:tt)*) => {
        $crate::__sdt_site_asm!([att_syntax,] $($site)*)
    };
}

/// Internal: one probe site, from the pairs made by `__sdt_zip!`. AArch64 has one assembler
/// syntax: registers print as `x0`, as `sys/sdt.h` writes them there.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_site {
    ($($site:tt)*) => {
        $crate::__sdt_site_asm!([] $($site)*)
    };
}

/// Internal: the probe site of `__sdt_site!`, with the assembler options that differ per
/// architecture (`[att_syntax,]` on x86-64) first.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_site_asm {
    ([$($syntax:tt)*] {
        provider: [$($prov:tt)*],
        name: [$($name_tpl:tt)*] [$($name_ops:tt)*],
        semaphore: [$($sem_tpl:tt)*] [$($sem_ops:tt)*] $(,)?
    } [$( (($T:ident $v:ident $s:ident $spec:literal) $arg:expr) )*]) => {{
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        fn __sdt_probe<$($T: $crate::SdtArg),*>($($v: $T),*) {
            // SAFETY: [1] The code is one `nop`; everything else goes into sections of their own
            // (`.pushsection`/`.popsection`), not into the function's instructions. [2] It reads
            // its register operands and writes no register, no memory and no flags, and does not
            // touch the stack, as the options say. `readonly` rather than `nomem`, so that memory a
            // pointer argument points to is stored before a tool reads it. [3] Its labels are
            // numeric (local), so copies made by inlining or unrolling do not collide; the one
            // named symbol, `_.stapsdt.base`, is defined at most once per object (`.ifndef`) and is
            // weak, hidden and COMDAT, as in `sys/sdt.h`.
            unsafe {
                ::core::arch::asm!(
                    ::core::concat!(
                        "990: nop\n",
                        ".pushsection .note.stapsdt,\"?\",\"note\"\n",
                        ".balign 4\n",
                        ".4byte 992f-991f, 994f-993f, 3\n",
                        "991: .asciz \"stapsdt\"\n",
                        "992: .balign 4\n",
                        "993: .8byte 990b\n",
                        ".8byte _.stapsdt.base\n",
                        ".8byte ", $($sem_tpl)*, "\n",
                        ".asciz \"", $($prov)*, "\"\n",
                        $($name_tpl)*
                        ".asciz \"", $($spec,)* "\"\n",
                        "994: .balign 4\n",
                        ".popsection\n",
                        ".ifndef _.stapsdt.base\n",
                        ".pushsection .stapsdt.base,\"aGR\",\"progbits\",.stapsdt.base,comdat\n",
                        ".weak _.stapsdt.base\n",
                        ".hidden _.stapsdt.base\n",
                        "_.stapsdt.base: .space 1\n",
                        ".size _.stapsdt.base, 1\n",
                        ".popsection\n",
                        ".endif\n",
                    ),
                    $($name_ops)*
                    $($sem_ops)*
                    $(
                        $v = in(reg) $crate::SdtArg::into_word($v),
                        $s = const <$T as $crate::SdtArg>::SPEC,
                    )*
                    options($($syntax)* readonly, nostack, preserves_flags),
                );
            }
        }
        __sdt_probe($($arg),*)
    }};
}

/// Internal: on targets without probes, the arguments are type-checked and not evaluated.
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_site {
    ({$($site:tt)*} [$( ($slot:tt $arg:expr) )*]) => {
        if false {
            $( $crate::__private::type_check(&$arg); )*
        }
    };
}

/// Internal: declares the semaphore of `provider:name` as `__SDT_SEMAPHORE` in the current block.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_extern {
    ($provider:ident, $name:ident) => {
        extern "C" {
            #[link_name = ::core::concat!(
                                ::core::stringify!($provider), "_", ::core::stringify!($name), "_semaphore"
                            )]
            static __SDT_SEMAPHORE: $crate::Semaphore;
        }
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_extern {
    ($provider:ident, $name:ident) => {};
}

/// Internal: whether the semaphore declared by `__sdt_semaphore_extern!` is non-zero.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_is_enabled {
    () => {
        // SAFETY: the symbol is a `Semaphore` (a `u16`) defined by `sdt_define_semaphore!`, or by
        // C code as `sys/sdt.h` defines semaphores, also a `u16`; nothing else may define a symbol
        // named `provider_name_semaphore` (the documented contract of the macros). Only shared
        // references to it are made, and it is read atomically.
        unsafe { &__SDT_SEMAPHORE }.is_enabled()
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_is_enabled {
    () => {
        false
    };
}

/// Internal: defines the semaphore of `provider:name`.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_define {
    ($provider:ident, $name:ident) => {
        const _: () = {
            // SAFETY (of the unsafe attributes): the symbol name belongs to this probe by the
            // macros' contract (one definition per program); `.probes` is a data section of its
            // own, which only semaphores use.
            #[unsafe(export_name = ::core::concat!(
                                ::core::stringify!($provider), "_", ::core::stringify!($name), "_semaphore"
                            ))]
            #[unsafe(link_section = ".probes")]
            static __SDT_SEMAPHORE: $crate::Semaphore = $crate::Semaphore::new();
        };
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_define {
    ($provider:ident, $name:ident) => {};
}

/// Internal: a semaphore without a symbol, for `__sdt_local_semaphore!`.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_local_semaphore_static {
    ($name:ident) => {
        // SAFETY (of the unsafe attribute): `.probes` is a data section of its own, which only
        // semaphores use.
        #[unsafe(link_section = ".probes")]
        static $name: $crate::Semaphore = $crate::Semaphore::new();
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_local_semaphore_static {
    ($name:ident) => {
        static $name: $crate::Semaphore = $crate::Semaphore::new();
    };
}

/// Internal: declares the semaphore of `provider:name`, with a reference the linker must resolve.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_declare {
    ($provider:ident, $name:ident) => {
        const _: () = {
            $crate::__sdt_semaphore_extern!($provider, $name);
            #[used]
            static __SDT_DECLARED: &$crate::Semaphore =
                // SAFETY: only the address is taken; see `__sdt_semaphore_is_enabled!`.
                unsafe { &__SDT_SEMAPHORE };
        };
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_semaphore_declare {
    ($provider:ident, $name:ident) => {};
}
