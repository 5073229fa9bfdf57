#[phosphor::trace(name = parse, category = "")]
fn f() {}

fn main() {
    f();
}
