//! `#[phosphor::trace]` on the four kinds of function: a free function, a method, a generic
//! function and an `async fn`, with the defaults and with every option.

use std::sync::{Arc, OnceLock};

use phosphor::{ArgValue, BufferMode, Phase, TraceConfig, TraceLog};

use crate::support::{events, started, stop_and_take};

/// The log these functions record to (`log = ...`): the global one belongs to other tests.
fn log() -> &'static TraceLog {
    static LOG: OnceLock<Arc<TraceLog>> = OnceLock::new();
    LOG.get_or_init(|| started(TraceConfig::new(BufferMode::Fixed, 8 << 20))).as_ref()
}

#[phosphor::trace(log = log())]
fn free(x: u32) -> u32 {
    x * 2
}

struct Parser {
    base: u64,
}

impl Parser {
    #[phosphor::trace(log = log(), category = "parse", name = "Parser::parse", args(input, self_base))]
    fn parse(&self, input: &str, self_base: u64) -> u64 {
        self.base + input.len() as u64 + self_base
    }
}

#[phosphor::trace(log = log(), args(item))]
fn generic<T: std::fmt::Debug + Clone>(item: u64, what: &T) -> String {
    format!("{item}:{:?}", what.clone())
}

#[phosphor::trace(log = log(), category = "net", args(id))]
async fn fetch(id: u64, text: String) -> Result<u64, std::num::ParseIntError> {
    // `?` infers as in the function itself, through the attribute's async block.
    let n: u64 = text.parse()?;
    YieldOnce(false).await;
    Ok(id + n)
}

/// Pending once, then ready: a second poll.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn the_attribute_records_functions_methods_generics_and_async_fns() {
    let log = log();
    assert_eq!(free(21), 42);
    assert_eq!(Parser { base: 1 }.parse("abc", 10), 14);
    assert_eq!(generic(5, &"x"), "5:\"x\"");
    assert_eq!(generic(6, &[1u8]), "6:[1]");
    assert_eq!(block_on(fetch(1, "41".into())), Ok(42));
    assert!(block_on(fetch(2, "not a number".into())).is_err());
    let trace = stop_and_take(log);
    let evs = events(&trace);
    let scope = |name: &str| -> Vec<_> {
        evs.iter().filter(|e| e.callsite.name == name && e.callsite.phase == Phase::Complete).collect()
    };
    // Defaults: the function's name, and the module path's last segment as category.
    let f = scope("free");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].callsite.category, "attribute");
    let p = scope("Parser::parse");
    assert_eq!((p.len(), p[0].callsite.category), (1, "parse"));
    assert!(matches!(p[0].args[0], Some(("input", ArgValue::Str("abc")))), "{:?}", p[0].args);
    assert!(matches!(p[0].args[1], Some(("self_base", ArgValue::U64(10)))), "{:?}", p[0].args);
    // One callsite for the generic function, whatever the type parameters.
    let g = scope("generic");
    assert_eq!(g.len(), 2);
    assert!(std::ptr::eq(g[0].callsite, g[1].callsite));
    let items: Vec<_> = g.iter().map(|e| e.args[0]).collect();
    assert!(matches!(items[..], [Some(("item", ArgValue::U64(5))), Some(("item", ArgValue::U64(6)))]));
    // The async fn: an async slice per run with its argument, and a poll slice per poll, linked
    // to it by the task id (a flow).
    let begins: Vec<_> =
        evs.iter().filter(|e| e.callsite.name == "fetch" && e.callsite.phase == Phase::AsyncBegin).collect();
    let ends: Vec<_> =
        evs.iter().filter(|e| e.callsite.name == "fetch" && e.callsite.phase == Phase::AsyncEnd).collect();
    assert_eq!((begins.len(), ends.len()), (2, 2));
    assert_eq!(begins[0].callsite.category, "net");
    assert!(matches!(begins[0].args[0], Some(("id", ArgValue::U64(1)))), "{:?}", begins[0].args);
    let polls = scope("fetch");
    assert!(polls.iter().all(|e| e.callsite.flow));
    let task = |id: u64| {
        polls.iter().filter(|e| matches!(e.args[0], Some(("task", ArgValue::U64(t))) if t == id)).count()
    };
    let (first, second) = (begins[0].async_id.unwrap(), begins[1].async_id.unwrap());
    assert_eq!((task(first), task(second)), (2, 1), "the first run yields once; the second fails at once");
}
