use sql_middleware::FromRow;

#[derive(FromRow)]
struct Nothing;

fn main() {}
