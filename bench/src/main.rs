//! `cargo run --release -p phosphor-bench`: Phosphor against the limit loop and its peers, in one
//! run. Work in progress (issue 4).

fn main() {
    println!("phosphor-bench: not written yet");
}
