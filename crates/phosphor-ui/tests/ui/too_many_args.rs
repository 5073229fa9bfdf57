#[phosphor::trace(args(a, b, c))]
fn f(a: u32, b: u32, c: u32) -> u32 {
    a + b + c
}

fn main() {
    f(1, 2, 3);
}
