#[sql_middleware::test(url = "sqlite::memory:", connections = "2")]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
