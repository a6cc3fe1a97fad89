//! `#[derive(FromRow)]` refuses what it cannot read with an error that says why (the expected
//! messages are the `.stderr` files beside each case).
//!
//! The cases build against the library with only the `derive` and `sqlite` features (this
//! crate's dev-dependency), so the compile-fail builds reuse little and need little: not the
//! whole feature set of the workspace.

#[test]
fn derive_errors_say_why() {
    trybuild::TestCases::new().compile_fail("tests/derive_ui/*.rs");
}
