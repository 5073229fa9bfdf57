//! The one list of the platforms whose linkers gather `linkme` sections.
//!
//! It sets `--cfg linker_sections` on those targets, and the runtime writes `#[cfg(linker_sections)]`
//! wherever the list applies (the `CALLSITES` slice, `__phosphor_register!`, the registry's listing
//! of static callsites, `__macro_support`'s re-export), so adding a platform is one line here.

/// The target OSes `linkme` supports.
const LINKER_SECTIONS: &[&str] =
    &["linux", "android", "macos", "ios", "windows", "freebsd", "openbsd", "illumos"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(linker_sections)");
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if LINKER_SECTIONS.contains(&os.as_str()) {
        println!("cargo::rustc-cfg=linker_sections");
    }
}
