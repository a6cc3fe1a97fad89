use sql_middleware::FromRow;

#[derive(FromRow)]
enum Shape {
    Circle,
}

fn main() {}
