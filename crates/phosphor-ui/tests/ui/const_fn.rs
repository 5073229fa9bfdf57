#[phosphor::trace]
const fn f() -> u32 {
    1
}

fn main() {
    f();
}
