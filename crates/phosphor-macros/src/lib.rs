//! `#[phosphor::trace]`: records each call of a function as a Phosphor scope, and each run of an
//! `async fn` as an async slice with a slice per poll. Use it through the `phosphor` crate, which
//! re-exports it; the expansion names `::phosphor`.
//!
//! ```ignore
//! #[phosphor::trace]                                  // category: the module's name; name: "parse"
//! fn parse(input: &str) -> usize { input.len() }
//!
//! #[phosphor::trace(category = "net", name = "fetch", args(id, len), group = net)]
//! async fn fetch(id: u64, len: u32) -> Vec<u8> { vec![0; len as usize] }
//! ```
//!
//! Options, in any order: `category = "…"` (default: the last segment of the module path),
//! `name = "…"` (default: the function's name), `args(a, b)` (at most two of the function's
//! parameters, recorded by reference when the scope opens, named as written), `group = g` (a
//! group made with `phosphor::group!`: a disabled group compiles the callsite out), and
//! `log = expr` (a `&TraceLog` other than the global one, evaluated at each call).
//!
//! A function is a scope, as `trace_scope!` at its first line is. An `async fn` is
//! `trace_future!` around its body: one async slice for the future's life (from its first poll,
//! when the body starts, to its completion, or its drop, marked `cancelled`), with the arguments on
//! its begin, and a slice per poll on the thread that ran it, linked by a flow. With the `off`
//! feature of `phosphor`, both are compiled out as those macros are.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, LitStr, Pat, ReturnType};

/// The attribute's options.
#[derive(Default)]
struct Options {
    category: Option<LitStr>,
    name: Option<LitStr>,
    args: Vec<Ident>,
    group: Option<Ident>,
    log: Option<syn::Expr>,
}

impl Options {
    fn parse(attr: TokenStream2) -> syn::Result<Options> {
        let mut o = Options::default();
        let parser = syn::meta::parser(|meta| {
            let key = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
            match key.as_str() {
                "category" | "name" => {
                    let slot = if key == "category" { &mut o.category } else { &mut o.name };
                    if slot.is_some() {
                        return Err(meta.error(format!("`{key}` is given twice")));
                    }
                    let lit: LitStr = meta.value()?.parse()?;
                    if lit.value().is_empty() {
                        return Err(syn::Error::new(lit.span(), format!("the {key} is empty")));
                    }
                    *slot = Some(lit);
                }
                "log" => {
                    if o.log.is_some() {
                        return Err(meta.error("`log` is given twice"));
                    }
                    o.log = Some(meta.value()?.parse()?);
                }
                "group" => {
                    if o.group.is_some() {
                        return Err(meta.error("`group` is given twice"));
                    }
                    o.group = Some(meta.value()?.parse()?);
                }
                "args" => {
                    if !o.args.is_empty() {
                        return Err(meta.error("`args` is given twice"));
                    }
                    meta.parse_nested_meta(|arg| {
                        let Some(id) = arg.path.get_ident() else {
                            return Err(arg.error("an argument is one of the function's parameters, by name"));
                        };
                        o.args.push(id.clone());
                        Ok(())
                    })?;
                    if o.args.len() > 2 {
                        return Err(syn::Error::new(
                            o.args[2].span(),
                            "at most two arguments are recorded (as the trace macros take)",
                        ));
                    }
                }
                _ => {
                    return Err(meta.error(
                        "unknown option; #[phosphor::trace] takes `category = \"…\"`, `name = \"…\"`, \
                         `args(a, b)`, `group = g` and `log = expr`",
                    ))
                }
            }
            Ok(())
        });
        parser.parse2(attr)?;
        Ok(o)
    }
}

/// The names of `f`'s parameters that are plain identifiers (`self` included).
fn parameter_names(f: &ItemFn) -> Vec<String> {
    f.sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Receiver(_) => Some("self".to_owned()),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(i) => Some(i.ident.to_string()),
                _ => None,
            },
        })
        .collect()
}

/// Records each call of the function as a scope (an `async fn`: an async slice, and a slice per
/// poll). See the crate's documentation for the options.
#[proc_macro_attribute]
pub fn trace(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let options = Options::parse(attr)?;
    let f: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(e.span(), "#[phosphor::trace] goes on a function (free, a method, or an async fn)")
    })?;
    if let Some(c) = &f.sig.constness {
        return Err(syn::Error::new(c.span(), "#[phosphor::trace] cannot record a `const fn`"));
    }
    let params = parameter_names(&f);
    for a in &options.args {
        if !params.contains(&a.to_string()) {
            return Err(syn::Error::new(a.span(), format!("`{a}` is not a parameter of `{}`", f.sig.ident)));
        }
    }
    let name = match &options.name {
        Some(n) => quote!(#n),
        None => {
            let n = LitStr::new(&f.sig.ident.to_string(), f.sig.ident.span());
            quote!(#n)
        }
    };
    let category = match &options.category {
        Some(c) => quote!(#c),
        None => quote!(::phosphor::__macro_support::module_category(::core::module_path!())),
    };
    let group = options.group.as_ref().map(|g| quote!(group: #g,));
    let group = match &options.log {
        Some(l) => quote!(#group log: #l,),
        None => quote!(#group),
    };
    let args = options.args.iter().map(|a| {
        let key = LitStr::new(&a.to_string(), a.span());
        // Spanned at the argument, so a type that cannot be recorded is reported there.
        quote_spanned!(a.span()=> , #key => &#a)
    });
    let ItemFn { attrs, vis, sig, block } = &f;
    let body = if sig.asyncness.is_some() {
        // An unreachable `return` of the declared type fixes the async block's output type, so
        // `?` and `return` in the body infer as they do in the function itself.
        let ret = match &sig.output {
            ReturnType::Default => quote!(()),
            ReturnType::Type(_, t) => quote!(#t),
        };
        let span = block.span();
        let pin_type = quote_spanned! {span=>
            #[allow(unreachable_code, clippy::diverging_sub_expression, clippy::needless_return)]
            if false {
                let __phosphor_ret: #ret = ::core::unreachable!();
                return __phosphor_ret;
            }
        };
        let stmts = &block.stmts;
        quote! {{
            ::phosphor::trace_future!(#group #category, #name, async move {
                #pin_type
                #(#stmts)*
            } #(#args)*)
            .await
        }}
    } else {
        quote! {{
            ::phosphor::trace_scope!(#group #category, #name #(#args)*);
            #block
        }}
    };
    Ok(quote! {
        #(#attrs)* #vis #sig #body
    })
}
