#[sql_middleware::test(url = "sqlite::memory:")]
fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
