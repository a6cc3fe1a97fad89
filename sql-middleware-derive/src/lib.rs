//! `#[derive(FromRow)]` for sql-middleware (re-exported by `sql_middleware` behind its `derive`
//! feature; use it from there).
//!
//! - A struct with named fields reads each field from the column of the same name (exact, then
//!   ASCII case-insensitive, as `SqlRow::get` does).
//! - A tuple struct reads its fields by position.
//! - Field attributes, inside `#[sql(..)]`:
//!   - `rename = "col"`: read column `col` instead of the field's name;
//!   - `default`: a missing column, or `NULL`, gives `Default::default()`;
//!   - `try_from = "T"`: read a `T`, then convert with `TryFrom<T>` (a failed conversion is a
//!     `TypeMismatch` error naming the column);
//!   - `flatten`: the field is itself `FromRow`, read from the same row.
//! - When each column is read once (no `flatten` field, no two fields of one column name), the
//!   derive also writes `FromRow::from_row_taking`, which reads each field with `SqlRow::take`:
//!   a MySQL text value is moved into its `String` rather than copied.
#![forbid(unsafe_code)]

mod embed;
mod test_attr;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr, Type, parse_macro_input};

/// Derives `sql_middleware::FromRow`; see the crate documentation for the attributes.
/// `embed_migrations!("migrations")`: the `.sql` files of a folder (relative to the calling
/// crate's `Cargo.toml`) embedded at compile time, as an array of `(file name, text)` pairs for
/// `sql_middleware::migrate::Migrator::from_files`. A changed file rebuilds the crate; a file
/// added to the folder needs a rebuild too (a `build.rs` with
/// `cargo:rerun-if-changed=migrations` makes that automatic).
#[proc_macro]
pub fn embed_migrations(input: TokenStream) -> TokenStream {
    let dir = parse_macro_input!(input as LitStr);
    embed::expand(&dir).into()
}

/// `#[sql_middleware::test]`: a test (an `async fn` taking `db: ConfigAndPool`) run with the
/// pool of a fresh database of its own, dropped when the test ends (re-exported by
/// `sql_middleware` behind its `testing` feature; see `sql_middleware::testing`).
///
/// Arguments: `url = ".."`, `env = "VAR"` (default `DATABASE_URL`; with `url`, read first),
/// `migrations = "dir"`, `fixtures("file.sql", ..)` (paths relative to `Cargo.toml`),
/// `keep_on_failure`, `connections = n`, `max_total_connections = n`. Other attributes (such
/// as `#[should_panic]` or `#[ignore]`) stay on the test.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut parsed = test_attr::Args::default();
    let parser = syn::meta::parser(|meta| parsed.parse(&meta));
    parse_macro_input!(args with parser);
    let item = parse_macro_input!(item as syn::ItemFn);
    match test_attr::expand(&parsed, item) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[proc_macro_derive(FromRow, attributes(sql))]
pub fn derive_from_row(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// What `#[sql(..)]` says about one field.
#[derive(Default)]
struct FieldOpts {
    rename: Option<LitStr>,
    default: bool,
    try_from: Option<Type>,
    flatten: bool,
}

fn field_opts(attrs: &[syn::Attribute]) -> syn::Result<FieldOpts> {
    let mut o = FieldOpts::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("sql")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                o.rename = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("default") {
                o.default = true;
            } else if meta.path.is_ident("try_from") {
                let s: LitStr = meta.value()?.parse()?;
                o.try_from = Some(s.parse()?);
            } else if meta.path.is_ident("flatten") {
                o.flatten = true;
            } else {
                return Err(meta.error(
                    "unknown sql attribute; expected `rename = \"..\"`, `default`, `try_from = \"T\"` or `flatten`",
                ));
            }
            Ok(())
        })?;
    }
    if o.flatten && (o.rename.is_some() || o.try_from.is_some() || o.default) {
        return Err(syn::Error::new(
            attrs[0].span(),
            "`flatten` reads a whole row: it cannot be combined with `rename`, `default` or `try_from`",
        ));
    }
    Ok(o)
}

/// How a field is read: by `SqlRow::get` from `&R` (`from_row`), or by `SqlRow::take` from
/// `&mut R` (`from_row_taking`).
#[derive(Clone, Copy)]
enum Read {
    Get,
    Take,
}

/// The expression that reads one field from `row`, with the column given by `col` (a name
/// literal or an index).
fn read_field(
    ty: &Type,
    opts: &FieldOpts,
    col: Tokens,
    label: &str,
    span: Span,
    how: Read,
) -> Tokens {
    let m = quote!(::sql_middleware);
    // `row` shared, whichever method this is.
    let shared = match how {
        Read::Get => quote!(row),
        Read::Take => quote!(&*row),
    };
    if opts.flatten {
        return quote_spanned!(span=> <#ty as #m::FromRow>::from_row(#shared)?);
    }
    let read = |t: &Type, at: &Tokens| match how {
        Read::Get => quote_spanned!(span=> #m::SqlRow::get::<#t>(row, #at)?),
        Read::Take => quote_spanned!(span=> #m::SqlRow::take::<#t>(&mut *row, #at)?),
    };
    let convert = |v: Tokens, from: &Type| {
        quote_spanned!(span=> <#ty as ::core::convert::TryFrom<#from>>::try_from(#v)
            .map_err(|e| #m::SqlMiddlewareDbError::new(
                #m::ErrorKind::TypeMismatch,
                ::std::format!("column `{}`: {}", #label, e),
            ))?)
    };
    let value = |at: &Tokens| match &opts.try_from {
        None => read(ty, at),
        Some(from) => convert(read(from, at), from),
    };
    if !opts.default {
        return value(&col);
    }
    let at = quote!(i);
    let present = value(&at);
    quote_spanned!(span=> match #m::ColumnRef::index_in(&#col, #shared) {
        ::core::result::Result::Ok(i)
            if !::core::matches!(#m::SqlRow::value_ref(#shared, i)?, #m::ValueRef::Null) =>
        {
            #present
        }
        _ => ::core::default::Default::default(),
    })
}

/// The body of `from_row` (`Read::Get`) or `from_row_taking` (`Read::Take`), and whether the
/// struct reads each column at most once, which `from_row_taking` needs: no `flatten` field
/// (it reads the whole row) and no two fields of one column name (names match ASCII
/// case-insensitively, so they are compared so).
fn body(name: &syn::Ident, fields: &Fields, how: Read) -> syn::Result<(Tokens, bool)> {
    match fields {
        Fields::Named(fields) => {
            let mut inits = Vec::new();
            let mut names = std::collections::HashSet::new();
            let mut once = true;
            for f in &fields.named {
                let opts = field_opts(&f.attrs)?;
                let ident = f.ident.as_ref().expect("named field");
                let column = opts.rename.as_ref().map_or_else(
                    || ident.to_string().trim_start_matches("r#").to_owned(),
                    LitStr::value,
                );
                once &= !opts.flatten && names.insert(column.to_ascii_lowercase());
                let lit = LitStr::new(&column, f.span());
                let read = read_field(&f.ty, &opts, quote!(#lit), &column, f.ty.span(), how);
                inits.push(quote!(#ident: #read));
            }
            Ok((
                quote!(::core::result::Result::Ok(Self { #(#inits),* })),
                once,
            ))
        }
        Fields::Unnamed(fields) => {
            let mut inits = Vec::new();
            let mut once = true;
            for (i, f) in fields.unnamed.iter().enumerate() {
                let opts = field_opts(&f.attrs)?;
                if opts.rename.is_some() {
                    return Err(syn::Error::new(
                        f.span(),
                        "`rename` names a column; tuple struct fields are read by position",
                    ));
                }
                once &= !opts.flatten;
                let read = read_field(&f.ty, &opts, quote!(#i), &i.to_string(), f.ty.span(), how);
                inits.push(read);
            }
            Ok((quote!(::core::result::Result::Ok(Self(#(#inits),*))), once))
        }
        Fields::Unit => Err(syn::Error::new(
            name.span(),
            "FromRow cannot be derived for a unit struct: it reads no column",
        )),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "FromRow can be derived for structs only (named fields by column name, tuple structs by position)",
        ));
    };
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let (get, once) = body(name, &data.fields, Read::Get)?;
    // Without reading each column once, `from_row_taking` keeps its default (`from_row`).
    let taking = if once {
        let (take, _) = body(name, &data.fields, Read::Take)?;
        quote! {
            #[inline]
            fn from_row_taking<R: ::sql_middleware::SqlRow>(
                row: &mut R,
            ) -> ::sql_middleware::Result<Self> {
                #take
            }
        }
    } else {
        Tokens::new()
    };
    Ok(quote! {
        impl #impl_generics ::sql_middleware::FromRow for #name #ty_generics #where_clause {
            #[inline]
            fn from_row<R: ::sql_middleware::SqlRow>(
                row: &R,
            ) -> ::sql_middleware::Result<Self> {
                #get
            }

            #taking
        }
    })
}
