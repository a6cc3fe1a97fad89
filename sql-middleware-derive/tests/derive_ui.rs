//! `#[derive(FromRow)]` and `#[sql_middleware::test]` refuse what they cannot read with an
//! error that says why (the expected messages are the `.stderr` files beside each case).
//!
//! The cases build against the library with only the `derive`, `sqlite` and `testing`
//! features (this crate's dev-dependency), so the compile-fail builds reuse little and need
//! little: not the whole feature set of the workspace.

#[test]
fn derive_errors_say_why() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/derive_ui/*.rs");
    t.compile_fail("tests/test_ui/*.rs");
}
