use sql_middleware::FromRow;

#[derive(FromRow)]
struct Inner {
    a: i64,
}

#[derive(FromRow)]
struct Outer {
    #[sql(flatten, rename = "x")]
    inner: Inner,
}

fn main() {}
