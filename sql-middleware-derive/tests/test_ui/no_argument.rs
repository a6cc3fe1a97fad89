#[sql_middleware::test(url = "sqlite::memory:")]
async fn t() {}

fn main() {}
