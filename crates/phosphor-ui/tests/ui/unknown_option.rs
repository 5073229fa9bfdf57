#[phosphor::trace(level = "info")]
fn f() {}

fn main() {
    f();
}
