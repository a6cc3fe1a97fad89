#[sql_middleware::test(url = "sqlite::memory:", url = "turso::memory:")]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
