use sql_middleware::FromRow;

#[derive(FromRow)]
struct User {
    #[sql(column = "user_id")]
    id: i64,
}

fn main() {}
