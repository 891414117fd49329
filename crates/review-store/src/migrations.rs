//! The schema migrations, one list per database, embedded in the binary.
//!
//! Each database has its own directory (`migrations/sqlite/`, `migrations/postgres/`)
//! of `NNNN_description.sql` files, applied in version order at open by sqlx's
//! migrator, which records them in `_sqlx_migrations`. The two lists keep the same
//! version numbers so "schema version N" means the same thing on both.
//!
//! To change the schema, add a file to **both** directories with the next version
//! and list it below; never edit a released migration (the migrator checks
//! checksums and refuses a database whose applied migration differs).

use std::borrow::Cow;

use sqlx::SqlSafeStr as _;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// One migration file, embedded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EmbeddedMigration {
    /// The version (the file name's numeric prefix).
    pub version: i64,
    /// The description (the rest of the file name).
    pub description: &'static str,
    /// The SQL.
    pub sql: &'static str,
}

/// SQLite's migrations, oldest first.
pub(crate) const SQLITE: &[EmbeddedMigration] = &[
    EmbeddedMigration {
        version: 1,
        description: "initial",
        sql: include_str!("../migrations/sqlite/0001_initial.sql"),
    },
    EmbeddedMigration {
        version: 2,
        description: "idempotent_runs",
        sql: include_str!("../migrations/sqlite/0002_idempotent_runs.sql"),
    },
    EmbeddedMigration {
        version: 3,
        description: "job_attempts",
        sql: include_str!("../migrations/sqlite/0003_job_attempts.sql"),
    },
    EmbeddedMigration {
        version: 4,
        description: "base_builds",
        sql: include_str!("../migrations/sqlite/0004_base_builds.sql"),
    },
    EmbeddedMigration {
        version: 5,
        description: "job_plans",
        sql: include_str!("../migrations/sqlite/0005_job_plans.sql"),
    },
    EmbeddedMigration {
        version: 6,
        description: "agent_cost",
        sql: include_str!("../migrations/sqlite/0006_agent_cost.sql"),
    },
];

/// PostgreSQL's migrations, oldest first.
pub(crate) const POSTGRES: &[EmbeddedMigration] = &[
    EmbeddedMigration {
        version: 1,
        description: "initial",
        sql: include_str!("../migrations/postgres/0001_initial.sql"),
    },
    EmbeddedMigration {
        version: 2,
        description: "idempotent_runs",
        sql: include_str!("../migrations/postgres/0002_idempotent_runs.sql"),
    },
    EmbeddedMigration {
        version: 3,
        description: "job_attempts",
        sql: include_str!("../migrations/postgres/0003_job_attempts.sql"),
    },
    EmbeddedMigration {
        version: 4,
        description: "base_builds",
        sql: include_str!("../migrations/postgres/0004_base_builds.sql"),
    },
    EmbeddedMigration {
        version: 5,
        description: "job_plans",
        sql: include_str!("../migrations/postgres/0005_job_plans.sql"),
    },
    EmbeddedMigration {
        version: 6,
        description: "agent_cost",
        sql: include_str!("../migrations/postgres/0006_agent_cost.sql"),
    },
];

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: i64 = 6;

/// The table sqlx's migrator records applied migrations in.
pub(crate) const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// A migrator for one database's list.
pub(crate) fn migrator(migrations: &[EmbeddedMigration]) -> Migrator {
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|migration| {
                Migration::new(
                    migration.version,
                    Cow::Borrowed(migration.description),
                    MigrationType::Simple,
                    migration.sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The embedded lists match the directories exactly, so a migration file
    /// cannot be added without being shipped (or shipped for one database only).
    #[test]
    fn embedded_lists_match_the_migration_directories() {
        for (directory, list) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(directory);
            let mut files: Vec<(i64, String, String)> = std::fs::read_dir(&path)
                .unwrap()
                .map(|entry| {
                    let entry = entry.unwrap();
                    let name = entry.file_name().into_string().unwrap();
                    let stem = name.strip_suffix(".sql").unwrap();
                    let (version, description) = stem.split_once('_').unwrap();
                    (
                        version.parse().unwrap(),
                        description.to_owned(),
                        std::fs::read_to_string(entry.path()).unwrap(),
                    )
                })
                .collect();
            files.sort();
            let embedded: Vec<(i64, String, String)> = list
                .iter()
                .map(|m| (m.version, m.description.to_owned(), m.sql.to_owned()))
                .collect();
            assert_eq!(files, embedded, "{directory}");
        }
    }

    #[test]
    fn both_databases_share_version_numbers_up_to_the_schema_version() {
        let versions = |list: &[EmbeddedMigration]| list.iter().map(|m| m.version).collect();
        let sqlite: Vec<i64> = versions(SQLITE);
        let postgres: Vec<i64> = versions(POSTGRES);
        assert_eq!(sqlite, postgres);
        assert_eq!(sqlite.last().copied(), Some(SCHEMA_VERSION));
        assert_eq!(sqlite, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    }
}
