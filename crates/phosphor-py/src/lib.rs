//! `phosphor` for Python (Palanteer's Python side, on Phosphor's engine).
//!
//! * `start(categories="*", mode="ring", size=64 MiB, path=None, functions=True, c_calls=False)`
//!   and `stop(path=None)`: a trace on Phosphor's global log; `stop` saves it to `path` (or
//!   `start`'s) and returns its figures.
//! * Automatic function tracing: a C-level profile hook (`PyEval_SetProfile`) records a begin and
//!   an end per Python call (and per C call with `c_calls`). Each code object's points are made
//!   once and kept in the code object's extra slot (`_PyCode_SetExtra`), so a call costs that slot
//!   read and the recording: no dictionary, no lock. New threads get the hook through
//!   `threading.setprofile`, and are recorded with their names.
//! * `begin(name)`/`end(name)`, `scope(name)` (a context manager) and `@function` (a decorator, a
//!   no-op while automatic tracing is on, as in Palanteer). An `end` whose name does not match the
//!   innermost `begin` of its thread warns (`RuntimeWarning`) and is recorded as given, so the
//!   tools report it too (`phosphor stats`' scope checks).
//! * `data(name, value)`, `log(level, category, fmt, *args)` (`{}` placeholders, formatted by the
//!   tools) and `set_thread_name(name)`.
//! * `register_command(name, spec, description, handler)` and `serve(path=None)`: remote commands
//!   (`phosphor call`), with the built-in `trace.*` and `points.*` commands.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Mutex, OnceLock};

use phosphor::bridge::{PointSpec, SiteCache, Value};
use phosphor::control::{self, Reply};
use phosphor::points::Point;
use phosphor::{BufferMode, Level, Phase, TraceConfig, TraceLog};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The category of automatically traced Python functions.
const FUNCTIONS: &str = "python";
/// The category of automatically traced C functions.
const C_FUNCTIONS: &str = "python.c";

/// Whether the profile hook records (it stays installed in threads after `stop`, and returns at
/// once).
static HOOK_ON: AtomicBool = AtomicBool::new(false);
/// Whether C calls are recorded too.
static C_CALLS: AtomicBool = AtomicBool::new(false);
/// The code-object extra slot holding each code object's `Site` (-1: not requested yet).
static CODE_EXTRA: AtomicIsize = AtomicIsize::new(-1);
/// Where `stop` saves the trace by default.
static PATH: Mutex<Option<String>> = Mutex::new(None);

/// The begin and end points of a function or a named scope.
#[derive(Debug)]
struct Site {
    begin: Point,
    end: Point,
}

fn log() -> &'static TraceLog {
    TraceLog::global()
}

fn runtime(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// The site of (`category`, `name`, `file`, `line`): made once and kept for the process (each
/// distinct one is a Phosphor point, bounded by `MAX_DYNAMIC_POINTS`).
fn site(category: &str, name: &str, file: &str, line: u32) -> Option<&'static Site> {
    static SITES: Table<(String, String, String, u32), Option<&'static Site>> = OnceLock::new();
    cached(&SITES, (category.to_owned(), name.to_owned(), file.to_owned(), line), || {
        let spec = |phase| PointSpec { file, line, ..PointSpec::new(category, name, phase) };
        let made = Site {
            begin: Point::custom(&spec(Phase::Begin)).ok()?,
            end: Point::custom(&spec(Phase::End)).ok()?,
        };
        Some(&*Box::leak(Box::new(made)))
    })
}

/// A table of what is made once per key (points, by their names), behind a lock: the manual API's
/// lookups, whose cost is small next to a Python call's.
type Table<K, V> = OnceLock<Mutex<HashMap<K, V>>>;

/// `table[key]`, made by `make` the first time.
fn cached<K: std::hash::Hash + Eq, V: Copy>(table: &Table<K, V>, key: K, make: impl FnOnce() -> V) -> V {
    let mut t = table.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    *t.entry(key).or_insert_with(make)
}

/// A code object's site, from its extra slot, or made and stored there on its first call.
///
/// # Safety
/// `code` is a live code object, and the caller holds the GIL.
#[inline]
unsafe fn code_site(code: *mut ffi::PyObject) -> Option<&'static Site> {
    // Relaxed: the index is requested once, under the GIL, before the hook is installed.
    let index = CODE_EXTRA.load(Ordering::Relaxed);
    if index < 0 {
        return None;
    }
    let mut extra: *mut c_void = std::ptr::null_mut();
    // SAFETY: `code` is a code object (caller) and `index` came from the interpreter.
    if unsafe { ffi::PyUnstable_Code_GetExtra(code, index, &mut extra) } == 0 && !extra.is_null() {
        // SAFETY: only `code_site_slow` stores into this slot, and it stores a leaked `&'static Site`.
        return Some(unsafe { &*(extra as *const Site) });
    }
    // SAFETY: forwarded from the caller.
    unsafe { code_site_slow(code, index) }
}

/// Makes a code object's site from its qualified name, file and first line.
///
/// # Safety
/// As [`code_site`].
#[cold]
#[inline(never)]
unsafe fn code_site_slow(code: *mut ffi::PyObject, index: ffi::Py_ssize_t) -> Option<&'static Site> {
    // SAFETY: the caller holds the GIL and `code` is live for this call.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: as above; a borrowed reference, not consumed.
    let code_obj = unsafe { Bound::from_borrowed_ptr(py, code) };
    let text = |attr: &str| code_obj.getattr(attr).and_then(|v| v.extract::<String>()).ok();
    let name = text("co_qualname").or_else(|| text("co_name"))?;
    let file = text("co_filename").unwrap_or_default();
    let line = code_obj.getattr("co_firstlineno").and_then(|v| v.extract::<u32>()).unwrap_or(0);
    let s = site(FUNCTIONS, &name, &file, line)?;
    // SAFETY: `s` is `'static`; the slot's free function is none, so the interpreter never frees it.
    unsafe { ffi::PyUnstable_Code_SetExtra(code, index, s as *const Site as *mut c_void) };
    Some(s)
}

/// The site of a C function, by its method definition (static for builtins and extension types,
/// whereas the function object may be made per call, as a bound method is).
///
/// # Safety
/// `func` is a live object, and the caller holds the GIL.
unsafe fn c_site(func: *mut ffi::PyObject) -> Option<&'static Site> {
    static C_SITES: OnceLock<SiteCache<Option<&'static Site>>> = OnceLock::new();
    // A builtin function or bound method, or an unbound method descriptor (`list.append` called
    // on its object, as CPython 3.11 calls methods): both lead to a static method definition.
    // SAFETY: `func` is live (caller); the type checks come before the casts.
    let def = unsafe {
        if ffi::PyCFunction_Check(func) != 0 {
            (*(func as *mut ffi::PyCFunctionObject)).m_ml as usize
        } else if ffi::Py_TYPE(func) == std::ptr::addr_of_mut!(ffi::PyMethodDescr_Type) {
            (*(func as *mut ffi::PyMethodDescrObject)).d_method as usize
        } else {
            return None;
        }
    };
    if def == 0 {
        return None;
    }
    let cache = C_SITES.get_or_init(|| SiteCache::new(16384));
    if let Some(s) = cache.get(def) {
        return *s;
    }
    // SAFETY: the caller holds the GIL and `func` is live for this call.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: as above; borrowed.
    let f = unsafe { Bound::from_borrowed_ptr(py, func) };
    let name = f
        .getattr("__qualname__")
        .or_else(|_| f.getattr("__name__"))
        .and_then(|v| v.extract::<String>())
        .unwrap_or_else(|_| "<C function>".into());
    *cache.insert(def, || site(C_FUNCTIONS, &name, "<C>", 0))?
}

/// The profile hook: a begin at each call, an end at each return.
unsafe extern "C" fn profile(
    _obj: *mut ffi::PyObject,
    frame: *mut ffi::PyFrameObject,
    what: c_int,
    arg: *mut ffi::PyObject,
) -> c_int {
    // Relaxed: a switch; a call or two recorded or not around `start`/`stop` does not matter.
    if !HOOK_ON.load(Ordering::Relaxed) {
        return 0;
    }
    let site = match what {
        ffi::PyTrace_CALL | ffi::PyTrace_RETURN => {
            // SAFETY: the interpreter passes the live frame of the event; we hold the GIL.
            let code = unsafe { ffi::PyFrame_GetCode(frame) } as *mut ffi::PyObject;
            // SAFETY: `code` is a new reference to the frame's code object, released below.
            let s = unsafe { code_site(code) };
            // SAFETY: the reference `PyFrame_GetCode` returned.
            unsafe { ffi::Py_DECREF(code) };
            s
        }
        // Relaxed: as `HOOK_ON`.
        ffi::PyTrace_C_CALL | ffi::PyTrace_C_RETURN | ffi::PyTrace_C_EXCEPTION
            if C_CALLS.load(Ordering::Relaxed) =>
        {
            // SAFETY: `arg` is the C function being called, live for the event; we hold the GIL.
            unsafe { c_site(arg) }
        }
        _ => None,
    };
    if let Some(s) = site {
        let call = what == ffi::PyTrace_CALL || what == ffi::PyTrace_C_CALL;
        // A return from a call that began before the hook was installed (the function that
        // called `start`, and its callers) has no begin: it is not recorded.
        let recorded = DEPTH.with(|d| match (call, d.get()) {
            (true, n) => {
                d.set(n + 1);
                true
            }
            (false, 0) => false,
            (false, n) => {
                d.set(n - 1);
                true
            }
        });
        if recorded {
            let point = if call { &s.begin } else { &s.end };
            point.record_in(log(), 0, 0, [None, None], false);
        }
    }
    0
}

thread_local! {
    /// Calls the hook has recorded a begin for and not yet an end, in this thread.
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The extra slot's free function: a site outlives its code objects (it is shared and leaked).
unsafe extern "C" fn keep_site(_: *mut c_void) {}

/// Installs the profile hook in the calling thread.
fn install_hook() {
    // SAFETY: called with the GIL held (from a Python call); `profile` has the `Py_tracefunc` ABI.
    unsafe { ffi::PyEval_SetProfile(Some(profile), std::ptr::null_mut()) };
}

/// What `threading.setprofile` runs in each new thread: names the thread, then replaces itself
/// with the C-level hook.
#[pyfunction]
#[pyo3(signature = (*_args))]
fn _thread_hook(py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
    if let Ok(name) = py.import("threading")?.call_method0("current_thread")?.getattr("name") {
        phosphor::set_thread_name(&name.extract::<String>()?);
    }
    install_hook();
    Ok(())
}

fn parse_level(level: &str) -> PyResult<Level> {
    level.parse().map_err(|_| {
        PyValueError::new_err(format!("{level:?} is not a level: error, warn, info, debug or trace"))
    })
}

#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (categories="*", mode="ring", size=64 << 20, path=None, functions=true, c_calls=false))]
fn start(
    py: Python<'_>,
    categories: &str,
    mode: &str,
    size: usize,
    path: Option<String>,
    functions: bool,
    c_calls: bool,
) -> PyResult<()> {
    let mode = match mode {
        "ring" => BufferMode::Ring,
        "fixed" => BufferMode::Fixed,
        other => return Err(PyValueError::new_err(format!("mode {other:?} is neither ring nor fixed"))),
    };
    let config = TraceConfig::new(mode, size).categories(categories).map_err(runtime)?;
    log().start(config).map_err(runtime)?;
    if let Ok(name) = py.import("threading")?.call_method0("current_thread")?.getattr("name") {
        phosphor::set_thread_name(&name.extract::<String>()?);
    }
    *PATH.lock().unwrap_or_else(|e| e.into_inner()) = path;
    if functions {
        // Relaxed: the index is set here, under the GIL, before any hook reads it.
        if CODE_EXTRA.load(Ordering::Relaxed) < 0 {
            // SAFETY: with the GIL; `keep_site` frees nothing (the sites are leaked on purpose).
            let index = unsafe { ffi::PyUnstable_Eval_RequestCodeExtraIndex(keep_site) };
            if index < 0 {
                return Err(runtime("the interpreter gave no code-object extra slot"));
            }
            CODE_EXTRA.store(index, Ordering::Relaxed);
        }
        // Relaxed: switches read by the hook (see `HOOK_ON`).
        C_CALLS.store(c_calls, Ordering::Relaxed);
        HOOK_ON.store(true, Ordering::Relaxed);
        DEPTH.with(|d| d.set(0));
        let hook = wrap_pyfunction!(_thread_hook, py)?;
        py.import("threading")?.call_method1("setprofile", (hook,))?;
        install_hook();
    }
    Ok(())
}

#[pyfunction]
#[pyo3(signature = (path=None))]
fn stop<'py>(py: Python<'py>, path: Option<String>) -> PyResult<Bound<'py, PyDict>> {
    // Relaxed: see `HOOK_ON`.
    HOOK_ON.store(false, Ordering::Relaxed);
    py.import("threading")?.call_method1("setprofile", (py.None(),))?;
    // SAFETY: with the GIL; removes this thread's hook.
    unsafe { ffi::PyEval_SetProfile(None, std::ptr::null_mut()) };
    log().stop();
    let trace = log().take_trace().ok_or_else(|| runtime("no trace was running"))?;
    let path = path.or_else(|| PATH.lock().unwrap_or_else(|e| e.into_inner()).take());
    if let Some(p) = &path {
        trace.save(p).map_err(runtime)?;
    }
    let s = trace.stats();
    let out = PyDict::new(py);
    out.set_item("recorded", s.recorded)?;
    out.set_item("dropped", s.dropped.total())?;
    out.set_item("path", path)?;
    Ok(out)
}

thread_local! {
    /// The names of this thread's open `begin`s, innermost last.
    static OPEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

#[pyfunction]
#[pyo3(signature = (name, category="python"))]
fn begin(name: &str, category: &str) {
    OPEN.with(|o| o.borrow_mut().push(name.to_owned()));
    if let Some(s) = site(category, name, "<python>", 0) {
        s.begin.record_in(log(), 0, 0, [None, None], false);
    }
}

#[pyfunction]
#[pyo3(signature = (name, category="python"))]
fn end(py: Python<'_>, name: &str, category: &str) -> PyResult<()> {
    let open = OPEN.with(|o| o.borrow_mut().pop());
    // The end is recorded as given, so that the tools report a mismatch too.
    if let Some(s) = site(category, name, "<python>", 0) {
        s.end.record_in(log(), 0, 0, [None, None], false);
    }
    let problem = match open {
        Some(o) if o == name => return Ok(()),
        Some(o) => format!("phosphor.end({name:?}) does not match the innermost begin({o:?}) of this thread"),
        None => format!("phosphor.end({name:?}) without a begin in this thread"),
    };
    let warning = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    PyErr::warn(py, &warning, &std::ffi::CString::new(problem).unwrap_or_default(), 1)
}

/// `with phosphor.scope(name):`: a begin on entry and an end on exit.
#[pyclass(module = "phosphor")]
struct Scope {
    name: String,
    category: String,
}

#[pymethods]
impl Scope {
    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        begin(&slf.name, &slf.category);
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        end(py, &self.name, &self.category)?;
        Ok(false)
    }
}

#[pyfunction]
#[pyo3(signature = (name, category="python"))]
fn scope(name: String, category: &str) -> Scope {
    Scope { name, category: category.to_owned() }
}

/// What `@phosphor.function` makes: the function, with a scope around each call while automatic
/// tracing is off.
#[pyclass(module = "phosphor")]
struct Function {
    func: Py<PyAny>,
    name: String,
}

#[pymethods]
impl Function {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        // Relaxed: see `HOOK_ON`. With automatic tracing on, the hook records the call already.
        if HOOK_ON.load(Ordering::Relaxed) {
            return self.func.call(py, args, kwargs);
        }
        begin(&self.name, FUNCTIONS);
        let out = self.func.call(py, args, kwargs);
        end(py, &self.name, FUNCTIONS)?;
        out
    }
}

#[pyfunction]
fn function(func: Bound<'_, PyAny>) -> PyResult<Function> {
    let name = func.getattr("__qualname__").or_else(|_| func.getattr("__name__"))?.extract::<String>()?;
    Ok(Function { func: func.unbind(), name })
}

/// A Python value as a Phosphor argument; other types as their `str()`, in `text`.
fn value<'a>(v: &Bound<'_, PyAny>, text: &'a mut String) -> Value<'a> {
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Value::Bool(b.is_true());
    }
    if let Ok(i) = v.extract::<i64>() {
        return Value::I64(i);
    }
    if let Ok(f) = v.extract::<f64>() {
        return Value::F64(f);
    }
    *text = match v.extract::<String>() {
        Ok(s) => s,
        Err(_) => v.str().map(|s| s.to_string()).unwrap_or_default(),
    };
    Value::Str(text)
}

#[pyfunction]
#[pyo3(signature = (name, value, category="python"))]
fn data(name: &str, value: &Bound<'_, PyAny>, category: &str) {
    static POINTS: Table<(String, String), Option<Point>> = OnceLock::new();
    let point = cached(&POINTS, (category.to_owned(), name.to_owned()), || {
        let spec = PointSpec { arg_names: ["value", ""], ..PointSpec::new(category, name, Phase::Data) };
        Point::custom(&spec).ok()
    });
    if let Some(p) = point {
        let mut text = String::new();
        p.record_in(log(), 0, 0, [Some(self::value(value, &mut text)), None], false);
    }
}

#[pyfunction]
#[pyo3(signature = (level, category, fmt, *args))]
fn log_(level: &str, category: &str, fmt: &str, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    static POINTS: Table<(Level, String, String), Option<Point>> = OnceLock::new();
    let level = parse_level(level)?;
    let point = cached(&POINTS, (level, category.to_owned(), fmt.to_owned()), || {
        Point::custom(&PointSpec { level: Some(level), ..PointSpec::new(category, fmt, Phase::Log) }).ok()
    });
    let Some(p) = point else { return Ok(()) };
    if !p.enabled_in(log()) {
        return Ok(());
    }
    let n = args.len().min(phosphor::format::MAX_PARAMS);
    let mut texts: Vec<String> = vec![String::new(); n];
    let items: Vec<Bound<'_, PyAny>> = args.iter().take(n).collect();
    let values: Vec<Value<'_>> = items.iter().zip(texts.iter_mut()).map(|(a, t)| value(a, t)).collect();
    p.log_in(log(), &values, args.len() > n);
    Ok(())
}

/// For the benchmark: keeps the profile hook installed but makes it return at once, which
/// measures what CPython's profiling mechanism costs before the hook does anything.
#[pyfunction]
fn _hook_records(on: bool) {
    // Relaxed: see `HOOK_ON`.
    HOOK_ON.store(on, Ordering::Relaxed);
}

#[pyfunction]
fn set_thread_name(name: &str) {
    phosphor::set_thread_name(name);
}

/// A command's parameters as Python values, in the order of its spec.
fn py_args<'py>(py: Python<'py>, args: &control::Args) -> PyResult<Bound<'py, PyTuple>> {
    let mut out: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut i = 0;
    while let Some(v) = args.get(i) {
        out.push(match v {
            control::Value::Int(x) => x.into_pyobject(py)?.into_any(),
            control::Value::Float(x) => x.into_pyobject(py)?.into_any(),
            control::Value::Str(s) => s.into_pyobject(py)?.into_any(),
        });
        i += 1;
    }
    PyTuple::new(py, out)
}

/// Runs a Python handler and turns what it returned into the reply: `(status, text)` (status 0
/// is success), a string, or `None`; an exception is an error.
fn run_handler(handler: &Py<PyAny>, args: &control::Args, reply: &mut Reply) {
    Python::attach(|py| {
        let result = py_args(py, args).and_then(|a| handler.call1(py, a));
        match result {
            Err(e) => reply.set_error(format!("the handler raised {e}")),
            Ok(r) => {
                let r = r.bind(py);
                if r.is_none() {
                    return;
                }
                if let Ok((status, text)) = r.extract::<(i64, String)>() {
                    if status == 0 {
                        reply.push(&text);
                    } else {
                        reply.set_error(text);
                    }
                } else if let Ok(text) = r.extract::<String>() {
                    reply.push(&text);
                } else {
                    reply
                        .set_error(format!("the handler returned {r}, not (status, text), a string or None"));
                }
            }
        }
    });
}

#[pyfunction]
fn register_command(name: &str, spec: &str, description: &str, handler: Py<PyAny>) -> PyResult<()> {
    control::register(name, spec, description, move |args, reply| run_handler(&handler, args, reply))
        .map_err(PyValueError::new_err)
}

#[pyfunction]
#[pyo3(signature = (path=None))]
fn serve(py: Python<'_>, path: Option<String>) -> PyResult<String> {
    static SERVER: Mutex<Option<control::Server>> = Mutex::new(None);
    static BUILTINS: OnceLock<()> = OnceLock::new();
    if BUILTINS.get().is_none() {
        control::register_builtins(log()).map_err(runtime)?;
        let _ = BUILTINS.set(());
    }
    let server =
        py.detach(|| control::serve(path.map(Into::into), control::Limits::default())).map_err(runtime)?;
    let socket = server.path().display().to_string();
    *SERVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(server);
    Ok(socket)
}

#[pymodule]
#[pyo3(name = "phosphor")]
fn phosphor_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start, m)?)?;
    m.add_function(wrap_pyfunction!(stop, m)?)?;
    m.add_function(wrap_pyfunction!(begin, m)?)?;
    m.add_function(wrap_pyfunction!(end, m)?)?;
    m.add_function(wrap_pyfunction!(scope, m)?)?;
    m.add_function(wrap_pyfunction!(function, m)?)?;
    m.add_function(wrap_pyfunction!(data, m)?)?;
    m.add("log", wrap_pyfunction!(log_, m)?)?;
    m.add_function(wrap_pyfunction!(set_thread_name, m)?)?;
    m.add_function(wrap_pyfunction!(register_command, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(_thread_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_hook_records, m)?)?;
    m.add_class::<Scope>()?;
    m.add_class::<Function>()?;
    Ok(())
}
