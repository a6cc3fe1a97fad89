//! The guides: the same pages as the repository's `docs/` folder (its user guides; contributor
//! docs are in `docs/dev/`), here so that their examples are compiled and tested with the crate
//! and can be read offline beside the API.

#[doc = include_str!("../docs/Api.md")]
pub mod api {}

#[doc = include_str!("../docs/Backends.md")]
pub mod backends {}

#[doc = include_str!("../docs/Postgres.md")]
pub mod postgres {}

#[doc = include_str!("../docs/HighAvailability.md")]
pub mod high_availability {}

#[cfg(feature = "migrate")]
#[doc = include_str!("../docs/Migrations.md")]
pub mod migrations {}

#[cfg(feature = "testing")]
#[doc = include_str!("../docs/TestingYourApplication.md")]
pub mod testing_your_application {}

#[doc = include_str!("../docs/Observability.md")]
pub mod observability {}

#[doc = include_str!("../docs/Clusters.md")]
pub mod clusters {}
