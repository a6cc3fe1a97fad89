use sql_middleware::FromRow;

struct Opaque;

#[derive(FromRow)]
struct Row {
    value: Opaque,
}

fn main() {}
