#[phosphor::trace]
struct S;

fn main() {
    let _ = S;
}
