#[sql_middleware::test(engine = "postgres")]
async fn t(_db: sql_middleware::ConfigAndPool) {}

fn main() {}
