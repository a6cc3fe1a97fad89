//! `#[derive(FromRow)]` refuses what it cannot read with an error that says why (the expected
//! messages are the `.stderr` files beside each case).
#![cfg(feature = "derive")]

#[test]
fn derive_errors_say_why() {
    trybuild::TestCases::new().compile_fail("tests/derive_ui/*.rs");
}
