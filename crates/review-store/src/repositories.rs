//! Repository names: validated, stored once, referred to by id everywhere else.
//!
//! GitHub repository names are case-insensitive (`Octo-Org/Widgets` and
//! `octo-org/widgets` are one repository), so rows are keyed by the
//! ASCII-lowercased name and the spelling first seen is kept for display. Ids
//! never change once assigned, so each store caches them in memory.

use crate::dialect::{Dialect as _, Sql, dispatch};
use crate::{Store, StoreError};

/// Longest repository name accepted (GitHub's limit for `owner/name` is far below).
const MAX_NAME_LENGTH: usize = 256;

const SELECT_ID: Sql = Sql::same("SELECT id FROM repositories WHERE name_key = $1");
const INSERT: Sql = Sql::same(
    "INSERT INTO repositories (name, name_key) VALUES ($1, $2) \
     ON CONFLICT (name_key) DO NOTHING RETURNING id",
);

/// Checks a repository name and returns its key (the ASCII-lowercased name).
pub(crate) fn repository_key(name: &str) -> Result<String, StoreError> {
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_NAME_LENGTH {
        Some(format!("it is longer than {MAX_NAME_LENGTH} bytes"))
    } else if name
        .chars()
        .any(|character| character.is_whitespace() || character.is_control())
    {
        Some(format!(
            "{name:?} contains whitespace or control characters"
        ))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::invalid(
            "repository name (expected OWNER/NAME)",
            reason,
        )),
        None => Ok(name.to_ascii_lowercase()),
    }
}

impl Store {
    /// The id of repository `name`, creating its row on first use.
    pub(crate) async fn repository_id(&self, name: &str) -> Result<i64, StoreError> {
        let key = repository_key(name)?;
        if let Some(id) = self.cached_repository_id(&key) {
            return Ok(id);
        }
        let operation = "registering a repository";
        let id = dispatch!(&self.backend, pool => {
            let inserted: Option<i64> = sqlx::query_scalar(pool.pick(&INSERT))
                .bind(name)
                .bind(&key)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error(operation))?;
            match inserted {
                Some(id) => id,
                // Another task or process registered it first.
                None => sqlx::query_scalar(pool.pick(&SELECT_ID))
                    .bind(&key)
                    .fetch_one(pool)
                    .await
                    .map_err(self.query_error(operation))?,
            }
        });
        self.cache_repository_id(key, id);
        Ok(id)
    }

    /// The id of repository `name` if the store has ever seen it. Read paths use
    /// this so that asking about a repository never writes.
    pub(crate) async fn existing_repository_id(
        &self,
        name: &str,
    ) -> Result<Option<i64>, StoreError> {
        let key = repository_key(name)?;
        if let Some(id) = self.cached_repository_id(&key) {
            return Ok(Some(id));
        }
        let id: Option<i64> = dispatch!(&self.backend, pool => {
            sqlx::query_scalar(pool.pick(&SELECT_ID))
                .bind(&key)
                .fetch_optional(pool)
                .await
                .map_err(self.query_error("looking up a repository"))?
        });
        if let Some(id) = id {
            self.cache_repository_id(key, id);
        }
        Ok(id)
    }

    fn cached_repository_id(&self, key: &str) -> Option<i64> {
        self.repository_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .copied()
    }

    fn cache_repository_id(&self, key: String, id: i64) {
        self.repository_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fold_ascii_case() {
        assert_eq!(
            repository_key("Octo-Org/Widgets").unwrap(),
            "octo-org/widgets"
        );
    }

    #[test]
    fn rejects_names_that_cannot_be_repositories() {
        for name in ["", "octo org/widgets", "octo/widgets\n", &"a".repeat(300)] {
            let error = repository_key(name).unwrap_err().to_string();
            assert!(error.contains("repository name"), "{name:?}: {error}");
        }
    }
}
