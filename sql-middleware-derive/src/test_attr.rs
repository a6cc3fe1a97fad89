//! `#[sql_middleware::test]`: an `async fn` taking the pool of a fresh database becomes a
//! `#[test]` that calls `sql_middleware::testing::run_test` with a `TestDatabase` builder made
//! from the attribute's arguments.
//!
//! Arguments (all optional): `url = "…"` (the engine's URL; with `env`, the fallback),
//! `env = "VAR"` (the variable the URL is read from; default `DATABASE_URL`),
//! `migrations = "dir"` (a folder relative to `Cargo.toml`, embedded at compile time),
//! `fixtures("a.sql", …)` (SQL files relative to `Cargo.toml`, run after the migrations),
//! `keep_on_failure`, `connections = n`, `max_total_connections = n`.

use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::meta::ParseNestedMeta;
use syn::{ItemFn, LitInt, LitStr};

/// What the attribute's arguments set.
#[derive(Default)]
pub(crate) struct Args {
    calls: Vec<Tokens>,
}

impl Args {
    /// Reads one argument.
    pub(crate) fn parse(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "url" => {
                let v: LitStr = meta.value()?.parse()?;
                self.calls.push(quote! { .url(#v) });
            }
            "env" => {
                let v: LitStr = meta.value()?.parse()?;
                self.calls.push(quote! { .url_env(#v) });
            }
            "migrations" => {
                let v: LitStr = meta.value()?.parse()?;
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
                    self.calls.push(quote! {
                        .fixture(#f, ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #f)))
                    });
                }
            }
            "keep_on_failure" => self.calls.push(quote! { .keep_on_failure(true) }),
            "connections" | "max_total_connections" => {
                let v: LitInt = meta.value()?.parse()?;
                let method = format_ident!("{}", key);
                self.calls.push(quote! { .#method(#v) });
            }
            _ => {
                return Err(meta.error(
                    "unknown argument; expected `url = \"..\"`, `env = \"VAR\"`, `migrations = \"dir\"`, \
                     `fixtures(\"file.sql\", ..)`, `keep_on_failure`, `connections = n` or \
                     `max_total_connections = n`",
                ));
            }
        }
        Ok(())
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
    if item.sig.inputs.len() != 1 {
        return Err(syn::Error::new_spanned(
            &item.sig.inputs,
            "a #[sql_middleware::test] function takes one argument, the pool (`db: ConfigAndPool`)",
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
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #name() {
            #sig #block
            let builder = ::sql_middleware::testing::TestDatabase::builder() #(#calls)*;
            ::sql_middleware::testing::run_test(builder, #body_name);
        }
    })
}
