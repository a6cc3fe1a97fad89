//! Configuration from a URL on every backend: the scheme picks the backend, parameters set the
//! pool, and the pool works. (The tests are not per backend: `urls::mysql_urls` is not matched
//! by `-- mysql::`.)

use sql_middleware::prelude::*;

async fn answers(db: &ConfigAndPool) -> i64 {
    let mut conn = db.get_connection().await.unwrap();
    let (n,): (i64,) = conn
        .query("SELECT 40 + $1")
        .params(&[2.into()])
        .one()
        .await
        .unwrap();
    n
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_urls() {
    let dir = crate::common::backends::TempDir::new("url");
    let file = dir.path().join("app.db");
    let url = format!(
        "sqlite://{}?max_size=3&busy_timeout=250ms&exec_model=offload&statement_timeout=2s",
        file.display()
    );
    let db = ConfigAndPool::from_url(&url)
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(db.database_type(), DatabaseType::Sqlite);
    assert_eq!(db.status().max_size, 3);
    assert_eq!(answers(&db).await, 42);
    assert!(file.exists(), "the file of the URL was used");
    let conn = db.get_connection().await.unwrap();
    assert_eq!(
        conn.statement_timeout(),
        Some(std::time::Duration::from_secs(2))
    );
    drop(conn);
    // A zero limit is a mistake, not "no limit".
    let zero = ConfigAndPool::from_url("sqlite::memory:?statement_timeout=0ms")
        .unwrap()
        .build()
        .await;
    assert_eq!(
        zero.map(drop).unwrap_err().kind(),
        sql_middleware::ErrorKind::Config
    );
    let mem = ConfigAndPool::from_url("sqlite::memory:")
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(answers(&mem).await, 42);
}

#[cfg(feature = "turso")]
#[tokio::test]
async fn turso_urls() {
    let dir = crate::common::backends::TempDir::new("url");
    let file = dir.path().join("app.db");
    let url = format!("turso://{}?max_size=2", file.display());
    let db = ConfigAndPool::from_url(&url)
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(db.database_type(), DatabaseType::Turso);
    assert_eq!(db.status().max_size, 2);
    assert_eq!(answers(&db).await, 42);
    assert!(file.exists());
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_urls() {
    let base = crate::common::pg::base_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}max_size=2&application_name=sqlmw_url_test&wait_timeout=2s");
    let db = ConfigAndPool::from_url(&url)
        .unwrap()
        .build()
        .await
        .unwrap();
    assert_eq!(db.database_type(), DatabaseType::Postgres);
    assert_eq!(db.status().max_size, 2);
    assert_eq!(answers(&db).await, 42);
    let mut conn = db.get_connection().await.unwrap();
    let (app,): (String,) = conn
        .query("SELECT current_setting('application_name')")
        .one()
        .await
        .unwrap();
    assert_eq!(app, "sqlmw_url_test", "driver parameters reach the server");
    // TLS asked of a build without it: refused, not plain text.
    #[cfg(not(feature = "postgres-tls"))]
    {
        let e = ConfigAndPool::from_url(&format!("{base}{sep}sslmode=require")).unwrap_err();
        assert_eq!(e.kind(), sql_middleware::ErrorKind::Config, "{e}");
    }
    // With TLS built in, a bad root file is a configuration error when the pool is built.
    #[cfg(feature = "postgres-tls")]
    {
        let e = ConfigAndPool::from_url(&format!(
            "{base}{sep}sslmode=verify-full&sslrootcert=no_such_ca_file.pem"
        ))
        .unwrap()
        .build()
        .await
        .unwrap_err();
        assert_eq!(e.kind(), sql_middleware::ErrorKind::Config, "{e}");
        assert!(e.to_string().contains("sslrootcert"), "{e}");
    }
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn mysql_urls() {
    let base = crate::common::mysql::base_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    // `mysql://` and `mariadb://` name the same backend; the URL's database is the session's.
    let mariadb = base.replacen("mysql://", "mariadb://", 1);
    for url in [&base, &mariadb] {
        let url = format!("{url}{sep}max_size=2&wait_timeout=2s");
        let db = ConfigAndPool::from_url(&url)
            .unwrap_or_else(|e| panic!("{url}: {e}"))
            .build()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(db.database_type(), DatabaseType::Mysql, "{url}");
        assert_eq!(db.status().max_size, 2, "{url}");
        assert_eq!(answers(&db).await, 42, "{url}");
        let mut conn = db.get_connection().await.unwrap();
        let (name,): (Option<String>,) = conn.query("SELECT DATABASE()").one().await.unwrap();
        let path = base
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('/'))
            .map(|(_, db)| db.split('?').next().unwrap_or(db).to_owned());
        assert_eq!(name, path, "{url}: the URL's database");
    }
    // A zero limit is a mistake, not "no limit".
    let zero = ConfigAndPool::from_url(&format!("{base}{sep}statement_timeout=0ms"))
        .unwrap()
        .build()
        .await;
    assert_eq!(
        zero.map(drop).unwrap_err().kind(),
        sql_middleware::ErrorKind::Config
    );
}
