#[sql_middleware::test(url = "sqlite::memory:")]
async fn t<T>(_db: T) {}

fn main() {}
