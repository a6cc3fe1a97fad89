//! `#[sql_middleware::test]`: an `async fn` taking the pool of a fresh database becomes a
//! `#[test]` that calls `sql_middleware::testing::run_test` with a `TestDatabase` builder made
//! from the attribute's arguments.
//!
//! Arguments (all optional): `url = "…"` (the engine's URL; with `env`, the fallback),
//! `env = "VAR"` (the variable the URL is read from; default `DATABASE_URL`),
//! `migrations = "dir"` (a folder relative to `Cargo.toml`, embedded at compile time),
//! `fixtures("a.sql", …)` (SQL files relative to `Cargo.toml`, run after the migrations),
//! `keep_on_failure` (or `keep_on_failure = false`), `connections = n` (at least 1),
//! `max_total_connections = n` (at least 2). Each is given once; a literal URL must name an
//! engine, and the fixtures must exist.

use proc_macro2::TokenStream as Tokens;
use quote::{ToTokens, format_ident, quote};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{ItemFn, LitInt, LitStr};

/// The URL schemes of the engines (whichever features the library is built with: the
/// attribute cannot see them, the test's run says when an engine is not built).
const SCHEMES: &[&str] = &[
    "postgres://",
    "postgresql://",
    "mysql://",
    "mariadb://",
    "sqlite:",
    "turso:",
];

/// What the attribute's arguments set.
#[derive(Default)]
pub(crate) struct Args {
    calls: Vec<Tokens>,
    seen: Vec<String>,
}

impl Args {
    /// Reads one argument.
    pub(crate) fn parse(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if self.seen.contains(&key) && key != "fixtures" {
            return Err(meta.error(format!("`{key}` is given twice")));
        }
        self.seen.push(key.clone());
        match key.as_str() {
            "url" => {
                let v: LitStr = meta.value()?.parse()?;
                let url = v.value();
                if !SCHEMES.iter().any(|s| url.trim().starts_with(s)) {
                    return Err(syn::Error::new(
                        v.span(),
                        format!(
                            "`{url}` names no engine: a test database URL starts with {}",
                            SCHEMES.join(", ")
                        ),
                    ));
                }
                self.calls.push(quote! { .url(#v) });
            }
            "env" => {
                let v: LitStr = meta.value()?.parse()?;
                self.calls.push(quote! { .url_env(#v) });
            }
            "migrations" => {
                let v: LitStr = meta.value()?.parse()?;
                // Here, not only in the expansion: that is inside the `#[test]` function, which
                // a build that is not a test's leaves out.
                let root = std::env::var("CARGO_MANIFEST_DIR").ok();
                if root.is_some_and(|root| !std::path::Path::new(&root).join(v.value()).is_dir()) {
                    return Err(syn::Error::new(
                        v.span(),
                        format!(
                            "the migrations folder {} is not there (paths are relative to \
                             Cargo.toml)",
                            v.value()
                        ),
                    ));
                }
                let files = crate::embed::expand(&v);
                self.calls.push(quote! {
                    .migrations(match ::sql_middleware::migrate::Migrator::from_files(#files) {
                        ::core::result::Result::Ok(m) => m,
                        ::core::result::Result::Err(e) => ::core::panic!("the test's migrations: {e}"),
                    })
                });
            }
            "fixtures" => {
                let content;
                syn::parenthesized!(content in meta.input);
                let files = content
                    .parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
                for f in files {
                    fixture_exists(&f)?;
                    self.calls.push(quote! {
                        .fixture(#f, ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #f)))
                    });
                }
            }
            "keep_on_failure" => {
                let keep = if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::LitBool>()?.value
                } else {
                    true
                };
                self.calls.push(quote! { .keep_on_failure(#keep) });
            }
            "connections" | "max_total_connections" => {
                let v: LitInt = meta.value()?.parse()?;
                let least = if key == "connections" { 1 } else { 2 };
                if v.base10_parse::<usize>()? < least {
                    return Err(syn::Error::new(
                        v.span(),
                        format!("`{key}` is at least {least}"),
                    ));
                }
                let method = format_ident!("{}", key);
                self.calls.push(quote! { .#method(#v) });
            }
            _ => {
                return Err(meta.error(format!(
                    "unknown argument `{key}`; expected `url = \"..\"` (whose scheme names the \
                     engine), `env = \"VAR\"`, `migrations = \"dir\"`, `fixtures(\"file.sql\", ..)`, \
                     `keep_on_failure`, `connections = n` or `max_total_connections = n`"
                )));
            }
        }
        Ok(())
    }
}

/// Fails, naming the file, when the fixture `f` (relative to `Cargo.toml`) is not there.
fn fixture_exists(f: &LitStr) -> syn::Result<()> {
    match std::env::var("CARGO_MANIFEST_DIR") {
        Ok(root) if !std::path::Path::new(&root).join(f.value()).is_file() => Err(syn::Error::new(
            f.span(),
            format!(
                "the fixture {} is not there (paths are relative to Cargo.toml)",
                f.value()
            ),
        )),
        _ => Ok(()),
    }
}

/// The expansion of the attribute on `item`.
pub(crate) fn expand(args: &Args, item: ItemFn) -> syn::Result<Tokens> {
    if item.sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            item.sig.fn_token,
            "#[sql_middleware::test] goes on an `async fn` taking the pool (`db: ConfigAndPool`)",
        ));
    }
    let one =
        "a #[sql_middleware::test] function takes one argument, the pool (`db: ConfigAndPool`)";
    let (ty, ty_span) = match item.sig.inputs.first() {
        None => return Err(syn::Error::new_spanned(&item.sig.ident, one)),
        Some(_) if item.sig.inputs.len() > 1 => {
            return Err(syn::Error::new_spanned(&item.sig.inputs, one));
        }
        Some(syn::FnArg::Receiver(r)) => return Err(syn::Error::new_spanned(r, one)),
        Some(syn::FnArg::Typed(t)) => (t.ty.to_token_stream(), t.ty.span()),
    };
    if !item.sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &item.sig.generics,
            "a #[sql_middleware::test] function is not generic",
        ));
    }
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = item;
    let name = sig.ident.clone();
    sig.ident = format_ident!("__sql_middleware_test_body");
    let body_name = &sig.ident;
    let calls = &args.calls;
    // The argument's type, checked where it is written (a mismatch then points at it).
    let check = quote::quote_spanned! {ty_span=>
        let _: ::core::marker::PhantomData<#ty> =
            ::core::marker::PhantomData::<::sql_middleware::ConfigAndPool>;
    };
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #name() {
            #sig #block
            #check
            let builder = ::sql_middleware::testing::TestDatabase::builder() #(#calls)*;
            ::sql_middleware::testing::run_test(builder, #body_name);
        }
    })
}
