#[sql_middleware::test(url = "sqlite::memory:", fixtures("no/such/file.sql"))]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
