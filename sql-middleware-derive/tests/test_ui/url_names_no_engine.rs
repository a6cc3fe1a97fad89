#[sql_middleware::test(url = "oracle://scott@localhost/orcl")]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
