#[sql_middleware::test(url = "sqlite::memory:", migrations = "no/such/folder")]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
