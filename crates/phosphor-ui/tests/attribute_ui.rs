//! The compile errors of `#[phosphor::trace]` misused: each names what is wrong, where.

#[test]
fn misuse_of_the_attribute_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
