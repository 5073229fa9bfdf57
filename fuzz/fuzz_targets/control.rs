//! Fuzzes the remote-command parsers: any specification either parses (and then prints back to an
//! equal specification) or is rejected with a message, and any command line is checked against a
//! specification without a panic. Input: a specification, a newline, a command's parameters.

#![no_main]

use libfuzzer_sys::fuzz_target;
use phosphor::control::{parse_args, Spec};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (spec_text, params) = text.split_once('\n').unwrap_or((text, ""));
    match Spec::parse(spec_text) {
        Ok(spec) => {
            if spec.params.iter().all(|p| !p.default.as_ref().is_some_and(|d| d.to_string().contains("]]"))) {
                assert_eq!(Spec::parse(&spec.to_string()).as_ref(), Ok(&spec), "{spec_text:?}");
            }
            if let Err(e) = parse_args(&spec, params) {
                assert!(!e.is_empty());
            }
        }
        Err(e) => assert!(!e.is_empty()),
    }
    let any = Spec::parse("first=int second_param=float[[-3.1]] third=string[[a b]]").expect("a valid spec");
    let _ = parse_args(&any, text);
});
