#[sql_middleware::test(url = "sqlite::memory:")]
async fn t(_db: sql_middleware::ConfigAndPool, _n: i32) {}

fn main() {}
