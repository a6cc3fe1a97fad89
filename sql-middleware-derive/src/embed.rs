//! `embed_migrations!("dir")`: the `.sql` files of a folder (relative to the calling crate's
//! `Cargo.toml`) as `(file name, text)` pairs, each text an `include_str!` of the file, so the
//! binary carries its migrations and a changed file rebuilds the crate.

use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::LitStr;

/// The expansion of `embed_migrations!(dir)`, or a compile error naming what is wrong.
pub(crate) fn expand(dir: &LitStr) -> Tokens {
    match files(dir) {
        Ok(pairs) => {
            let (names, paths): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
            quote! { [ #( (#names, ::core::include_str!(#paths)) ),* ] }
        }
        Err(message) => syn::Error::new(dir.span(), message).to_compile_error(),
    }
}

/// The `.sql` files of the folder, sorted by name, with their absolute paths.
fn files(dir: &LitStr) -> Result<Vec<(String, String)>, String> {
    let root = std::env::var("CARGO_MANIFEST_DIR")
        .map_err(|_| "embed_migrations! needs CARGO_MANIFEST_DIR (build with cargo)".to_owned())?;
    let path = std::path::Path::new(&root).join(dir.value());
    let entries = std::fs::read_dir(&path)
        .map_err(|e| format!("cannot read the migrations folder {}: {e}", dir.value()))?;
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| format!("cannot read the migrations folder {}: {e}", dir.value()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".sql") || !e.path().is_file() {
            continue;
        }
        let full = e
            .path()
            .to_str()
            .ok_or_else(|| format!("the path of {name} is not UTF-8"))?
            .to_owned();
        out.push((name, full));
    }
    out.sort();
    Ok(out)
}
