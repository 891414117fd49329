//! Authentication the way GitHub does it: personal access tokens and installation tokens
//! (`Authorization: token …`, `Bearer …`, or HTTP Basic with the token as password, as git
//! sends it), GitHub App JWTs signed RS256 and verified against the app's public key, and test
//! key pairs for those apps.

use axum::http::{HeaderMap, StatusCode, header};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::SimError;
use super::api::{Actor, ApiError};
use super::state::{SimState, TokenSubject};

/// What the `Authorization` header carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credential {
    None,
    Token(String),
    Jwt(String),
}

/// Reads the `Authorization` header.
pub(crate) fn credential(headers: &HeaderMap) -> Result<Credential, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(Credential::None);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::bad_credentials())?
        .trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let rest = rest.trim();
    let secret = match scheme.to_ascii_lowercase().as_str() {
        "token" | "bearer" => rest.to_owned(),
        "basic" => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .map_err(|_| ApiError::bad_credentials())?;
            let decoded = String::from_utf8(decoded).map_err(|_| ApiError::bad_credentials())?;
            let (user, password) = decoded.split_once(':').unwrap_or((decoded.as_str(), ""));
            if password.is_empty() {
                user.to_owned()
            } else {
                password.to_owned()
            }
        }
        _ => return Err(ApiError::bad_credentials()),
    };
    if secret.is_empty() {
        return Err(ApiError::bad_credentials());
    }
    if looks_like_jwt(&secret) {
        Ok(Credential::Jwt(secret))
    } else {
        Ok(Credential::Token(secret))
    }
}

fn looks_like_jwt(secret: &str) -> bool {
    secret.starts_with("eyJ") && secret.split('.').count() == 3
}

/// The claims GitHub reads from an app's JWT.
#[derive(Debug, Deserialize)]
struct AppClaims {
    iat: Option<i64>,
    exp: Option<i64>,
    /// The app id (a number or a string) or its client id.
    iss: Option<Value>,
}

fn jwt_error(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
        .with_documentation("https://docs.github.com/rest")
}

/// Who a credential authenticates, and whose budget it spends.
pub(crate) fn authenticate(
    state: &SimState,
    credential: &Credential,
    now: DateTime<Utc>,
) -> Result<(Actor, String), ApiError> {
    match credential {
        Credential::None => Ok((Actor::Anonymous, "anonymous".to_owned())),
        Credential::Token(secret) => {
            let token = state
                .tokens
                .get(secret)
                .ok_or_else(ApiError::bad_credentials)?;
            if token.expires_at.is_some_and(|expires_at| expires_at <= now) {
                return Err(ApiError::bad_credentials());
            }
            let budget_key = SimState::budget_key(token, secret);
            let actor = match &token.subject {
                TokenSubject::User(login) => Actor::User {
                    login: login.clone(),
                },
                TokenSubject::Installation(installation_id) => {
                    let installation = state
                        .installations
                        .get(installation_id)
                        .ok_or_else(ApiError::bad_credentials)?;
                    let app = state
                        .apps
                        .get(&installation.app_id)
                        .ok_or_else(ApiError::bad_credentials)?;
                    Actor::Installation {
                        installation_id: *installation_id,
                        bot_login: format!("{}[bot]", app.slug),
                        repositories: token.repositories.clone(),
                    }
                }
            };
            Ok((actor, budget_key))
        }
        Credential::Jwt(jwt) => {
            let app_id = verify_app_jwt(state, jwt, now)?;
            Ok((Actor::App { app_id }, format!("app:{app_id}")))
        }
    }
}

/// Verifies an app JWT (RS256 signature, `iat`, `exp` at most ten minutes ahead, `iss`) and
/// returns the app's id.
fn verify_app_jwt(state: &SimState, jwt: &str, now: DateTime<Utc>) -> Result<u64, ApiError> {
    let undecodable = || jwt_error("A JSON web token could not be decoded");
    let unverified: jsonwebtoken::TokenData<AppClaims> =
        jsonwebtoken::dangerous::insecure_decode(jwt).map_err(|_| undecodable())?;
    let issuer = unverified.claims.iss.as_ref().ok_or_else(undecodable)?;
    let app = state
        .apps
        .values()
        .find(|app| match issuer {
            Value::Number(number) => number.as_u64() == Some(app.id),
            Value::String(text) => text == &app.id.to_string() || text == &app.client_id,
            _ => false,
        })
        .ok_or_else(|| {
            jwt_error("'Issuer' claim ('iss') must be an Integer or the client ID of the app")
        })?;
    let key = jsonwebtoken::DecodingKey::from_rsa_raw_components(
        &app.public_modulus,
        &app.public_exponent,
    );
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let verified: jsonwebtoken::TokenData<AppClaims> =
        jsonwebtoken::decode(jwt, &key, &validation).map_err(|_| undecodable())?;
    let now = now.timestamp();
    let iat = verified.claims.iat.ok_or_else(|| {
        jwt_error("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
    })?;
    let exp = verified.claims.exp.ok_or_else(|| {
        jwt_error("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
    })?;
    // GitHub allows 60 seconds of clock drift.
    if iat > now + 60 {
        return Err(jwt_error(
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        ));
    }
    if exp <= now {
        return Err(jwt_error(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        ));
    }
    if exp > now + 600 + 60 {
        return Err(jwt_error(
            "'Expiration time' claim ('exp') is too far in the future",
        ));
    }
    Ok(app.id)
}

/// A freshly generated RSA key pair for a test GitHub App.
pub(crate) struct AppKeyPair {
    /// The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as GitHub hands it out.
    pub private_key_pem: String,
    pub modulus: Vec<u8>,
    pub exponent: Vec<u8>,
}

/// Generates a 2048-bit RSA key pair.
pub(crate) fn generate_app_key() -> Result<AppKeyPair, SimError> {
    use aws_lc_rs::encoding::AsDer as _;
    use aws_lc_rs::signature::KeyPair as _;
    let key_pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
        .map_err(|_| SimError::Unexpected("could not generate an RSA key pair".to_owned()))?;
    let der = key_pair
        .as_der()
        .map_err(|_| SimError::Unexpected("could not serialise the RSA private key".to_owned()))?;
    let private_key_pem = pem::encode(&pem::Pem::new("PRIVATE KEY", der.as_ref().to_vec()));
    let public = key_pair.public_key();
    Ok(AppKeyPair {
        private_key_pem,
        modulus: public.modulus().big_endian_without_leading_zero().to_vec(),
        exponent: public.exponent().big_endian_without_leading_zero().to_vec(),
    })
}
