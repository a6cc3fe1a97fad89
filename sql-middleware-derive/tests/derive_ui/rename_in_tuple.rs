use sql_middleware::FromRow;

#[derive(FromRow)]
struct Pair(#[sql(rename = "a")] i64, String);

fn main() {}
