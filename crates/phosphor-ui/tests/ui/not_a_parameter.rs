#[phosphor::trace(args(count))]
fn f(n: u32) -> u32 {
    n
}

fn main() {
    f(1);
}
