//! `cargo run --release -p phosphor-bench`: Phosphor against the limit loop and its peers, in one
//! run, printed as Markdown tables. See the library's documentation for what is measured and how.

use phosphor_bench::{catalog, full};

const USAGE: &str = "\
usage: phosphor-bench [--quick] [--rounds N] [--no-instr | --instr]
       phosphor-bench --instr-only [--ids ID,ID,...]
       phosphor-bench --scenario ID --iters N [--batches S]
       phosphor-bench --list

  (default)     the full run: about 21 rounds, scaling, memory and callgrind (2-3 minutes)
  --quick       5 short rounds, no callgrind unless --instr (about 20 seconds)
  --rounds N    this many timed rounds
  --no-instr    skip the callgrind instruction counts
  --instr-only  only the callgrind instruction counts (of --ids, default all), as a table
  --scenario    run one scenario in this process and print its samples and check
                (how the harness runs `tracing` with no subscriber, and callgrind)
  --list        list the scenario ids";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut quick = false;
    let mut rounds = None;
    let mut instr = None;
    let mut scenario = None;
    let mut iters = 100_000u64;
    let mut batches = 1usize;
    let mut instr_only = false;
    let mut ids: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| -> String {
            it.next().cloned().unwrap_or_else(|| fail(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "--quick" => quick = true,
            "--rounds" => rounds = Some(parse(&value("--rounds"))),
            "--no-instr" => instr = Some(false),
            "--instr" => instr = Some(true),
            "--instr-only" => instr_only = true,
            "--ids" => ids = Some(value("--ids")),
            "--scenario" => scenario = Some(value("--scenario")),
            "--iters" => iters = parse(&value("--iters")),
            "--batches" => batches = parse(&value("--batches")),
            "--list" => {
                for id in catalog::IDS {
                    println!("{id}");
                }
                return;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!("unknown argument `{other}`")),
        }
    }
    if let Some(id) = scenario {
        match full::child(&id, iters, batches) {
            Ok(true) => {}
            Ok(false) => std::process::exit(1),
            Err(e) => fail(&e),
        }
        return;
    }
    if instr_only {
        let ids: Vec<&'static str> = match &ids {
            None => catalog::IDS.to_vec(),
            Some(list) => list
                .split(',')
                .map(|id| {
                    catalog::IDS
                        .iter()
                        .copied()
                        .find(|k| *k == id)
                        .unwrap_or_else(|| fail(&format!("unknown id `{id}`")))
                })
                .collect(),
        };
        print!("{}", full::instr_table(&ids, quick));
        return;
    }
    let command = std::iter::once("cargo run --release -p phosphor-bench".to_string())
        .chain((!args.is_empty()).then(|| format!("-- {}", args.join(" "))))
        .collect::<Vec<_>>()
        .join(" ");
    let cfg = full::Config { quick, rounds, instr: instr.unwrap_or(!quick), command };
    let results = full::run(&cfg);
    print!("{}", results.render());
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| fail(&format!("not a number: `{s}`")))
}

fn fail(msg: &str) -> ! {
    eprintln!("phosphor-bench: {msg}\n\n{USAGE}");
    std::process::exit(2);
}
