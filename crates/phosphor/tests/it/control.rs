//! Remote commands: Palanteer's CLI specification and command examples, table-driven, and the
//! registry's errors.

// Palanteer's examples use the digits of π as an arbitrary default value.
#![allow(clippy::approx_constant)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use phosphor::control::{self, parse_args, Spec, Value};

const PALANTEER_SPEC: &str =
    "first=int second_param=float[[-3.14159265359]] third=string[[default string, and we can use space]]";

#[test]
fn palanteer_specifications_parse_and_bad_ones_say_why() {
    for ok in
        ["first=int second_param=float third=string", PALANTEER_SPEC, "", "msg=string", "  a=int   b=float  "]
    {
        let spec = Spec::parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec, "{ok:?} prints back to itself");
    }
    let spec = Spec::parse(PALANTEER_SPEC).unwrap();
    assert_eq!(spec.params[1].default, Some(Value::Float(-3.14159265359)));
    assert_eq!(spec.params[2].default, Some(Value::Str("default string, and we can use space".into())));
    for (bad, why) in [
        ("first=integer", "unknown type \"integer\""),
        ("first", "has no '=type'"),
        ("=int", "not a parameter name"),
        ("a=int a=float", "declared twice"),
        ("a=int[[x]]", "\"x\" is not an integer"),
        ("a=float[[1.5", "not closed"),
        ("a=string[x]", "written [[value]]"),
        ("a=int[[1]]b=int", "without a space"),
    ] {
        let e = Spec::parse(bad).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
}

#[test]
fn palanteer_command_examples_behave_as_its_spec_says() {
    let spec = Spec::parse(PALANTEER_SPEC).unwrap();
    let pi = Value::Float(-3.14159265359);
    let default_third = Value::Str("default string, and we can use space".into());
    // The valid examples, and the values they give.
    for (params, want) in [
        ("f=14", [Value::Int(14), pi.clone(), default_third.clone()]),
        ("second=5.3 f=14", [Value::Int(14), Value::Float(5.3), default_third.clone()]),
        ("fi=1 third=cherry", [Value::Int(1), pi.clone(), Value::Str("cherry".into())]),
        (
            "f=14 t=[[apple, banana and cherry]] s=5",
            [Value::Int(14), Value::Float(5.0), Value::Str("apple, banana and cherry".into())],
        ),
    ] {
        let args = parse_args(&spec, params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
        let got: Vec<Value> = (0..3).map(|i| args.get(i).unwrap().clone()).collect();
        assert_eq!(got, want, "{params:?}");
    }
    // The invalid ones (the name check is `call`'s: see below), with their reasons.
    for (params, why) in [
        ("sec=5.3", "missing mandatory parameter: first"),
        ("second_pa=5.3 f=banana", "\"banana\" is not an integer"),
        ("f=1 th=cherry and banana", "\"and banana\" is not a parameter=value pair"),
        ("f=1 f=2", "given twice"),
        ("x=1", "no parameter is called \"x\""),
        ("f=1 t=[[open", "without closing"),
        ("f=1 s=inf", "not a finite number"),
    ] {
        let e = parse_args(&spec, params).unwrap_err();
        assert!(e.contains(why), "{params:?}: {e}");
    }
}

#[test]
fn a_prefix_must_name_one_parameter_and_a_whole_name_wins() {
    let spec = Spec::parse("min=int max=int minimum=int[[0]]").unwrap();
    let e = parse_args(&spec, "m=1").unwrap_err();
    assert!(e.contains("ambiguous") && e.contains("min") && e.contains("max"), "{e}");
    let args = parse_args(&spec, "mi=1 ma=2").unwrap_err();
    assert!(args.contains("ambiguous"), "mi may be min or minimum: {args}");
    let args = parse_args(&spec, "min=1 ma=2 minim=3").unwrap();
    assert_eq!((args.int(0), args.int(1), args.int(2)), (Some(1), Some(2), Some(3)));
    assert_eq!(args.by_name("max"), Some(&Value::Int(2)));
}

#[test]
fn registered_commands_are_called_with_checked_arguments_and_rejected_ones_never() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (calls.clone(), seen.clone());
    control::register("test::setRange", "min=int max=int", "sets the bounds", move |args, reply| {
        c.fetch_add(1, Ordering::Relaxed);
        let (min, max) = (args.int(0).unwrap(), args.int(1).unwrap());
        if min > max {
            reply.set_error(format!("min ({min}) must not exceed max ({max})"));
            return;
        }
        s.lock().unwrap().push((min, max));
        reply.push("ok");
    })
    .unwrap();
    let r = control::call("test::setRange mi=300 ma=500");
    assert_eq!((r.error, r.text.as_str()), (false, "ok"));
    let r = control::call("test::setRange min=9 max=1");
    assert!(r.error && r.text.contains("must not exceed"), "{r:?}");
    for bad in [
        "test::setRang min=1 max=2",
        "test::setRange min=1",
        "test::setRange min=a max=2",
        "test::setRange m=1 max=2",
    ] {
        let r = control::call(bad);
        assert!(r.error, "{bad:?} is rejected");
        assert!(!r.text.is_empty(), "{bad:?} says why");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 2, "the handler ran for the two well-formed commands only");
    assert_eq!(*seen.lock().unwrap(), [(300, 500)]);
    // Registration errors.
    let e = control::register("test::setRange", "", "again", |_, _| {}).unwrap_err();
    assert!(e.contains("already registered"), "{e}");
    let e = control::register("test::bad", "x=double", "", |_, _| {}).unwrap_err();
    assert!(e.contains("unknown type"), "{e}");
    let e = control::register("two words", "", "", |_, _| {}).unwrap_err();
    assert!(e.contains("one word"), "{e}");
    assert!(control::list()
        .iter()
        .any(|(n, s, d)| n == "test::setRange" && s == "min=int max=int" && d == "sets the bounds"));
}
