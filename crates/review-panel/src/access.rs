//! Who may read the panel: only whoever holds its secret.
//!
//! The page shows the developer's review and, through the file view, files of
//! their repository; its loopback port is reachable by every process and user
//! on the machine. So each panel draws a [`Secret`] (256 bits from the
//! operating system's random source) when it starts and prints it only in its
//! URL (`http://127.0.0.1:PORT/?token=SECRET`). The first visit with the
//! secret in the query is answered with a redirect to the same address without
//! it (so it does not stay in the address bar or history) and a cookie
//! (`HttpOnly; SameSite=Strict; Path=/`, named after the port, because cookies
//! are not kept per port and two panels would otherwise overwrite each
//! other's). Every request, page, asset, API or event stream, must then carry
//! the cookie or the secret, compared in constant time ([`Secret::matches`]),
//! or it is refused with 403 by `crate::http`.
//!
//! The secret is never logged and is not sent back over the review-panel
//! socket: a confined agent in `review-bot review --local` may reach that
//! socket, and with the secret it could read through the panel any file it
//! names in a review.

use std::fmt;

/// The query parameter that carries the secret on the first visit.
pub const TOKEN_PARAMETER: &str = "token";

/// Bytes of randomness in a secret (printed as twice as many hex digits).
const SECRET_BYTES: usize = 32;

/// A panel's secret.
#[derive(Clone)]
pub struct Secret {
    /// Lower-case hexadecimal, [`SECRET_BYTES`] × 2 characters.
    hex: String,
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret(…)")
    }
}

impl Secret {
    /// Draws a new secret from the operating system's random source
    /// (`/dev/urandom`, the kernel's CSPRNG; no `unsafe` for `getrandom(2)`).
    pub fn generate() -> std::io::Result<Self> {
        use std::io::Read as _;
        let mut bytes = [0_u8; SECRET_BYTES];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        let mut hex = String::with_capacity(SECRET_BYTES * 2);
        for byte in bytes {
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 0x0f)]));
        }
        Ok(Self { hex })
    }

    /// The secret as it appears in the URL and the cookie.
    pub fn expose(&self) -> &str {
        &self.hex
    }

    /// Whether `candidate` is the secret, in time independent of where they differ.
    pub fn matches(&self, candidate: &str) -> bool {
        let expected = self.hex.as_bytes();
        let candidate = candidate.as_bytes();
        if expected.len() != candidate.len() {
            return false;
        }
        let difference = expected
            .iter()
            .zip(candidate)
            .fold(0_u8, |difference, (left, right)| {
                difference | (left ^ right)
            });
        std::hint::black_box(difference) == 0
    }
}

/// The cookie that carries the secret for the panel on `port`.
pub fn cookie_name(port: u16) -> String {
    format!("review-panel-{port}")
}

/// The value of cookie `name` in a `Cookie` header, if present.
pub fn cookie_value<'h>(header: &'h str, name: &str) -> Option<&'h str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value.trim())
    })
}

/// Splits the secret out of a query string: the secret (if given) and the
/// rest of the query, unchanged.
pub fn take_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=') {
            Some((TOKEN_PARAMETER, value)) => token = Some(value),
            _ => rest.push(pair),
        }
    }
    (token, rest.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_compared_whole() {
        let first = Secret::generate().unwrap();
        let second = Secret::generate().unwrap();
        assert_eq!(first.expose().len(), 64);
        assert!(first.expose().bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_ne!(first.expose(), second.expose());
        assert!(first.matches(first.expose()));
        assert!(!first.matches(second.expose()));
        assert!(!first.matches(&first.expose()[..63]));
        assert!(!first.matches(""));
        assert_eq!(format!("{first:?}"), "Secret(…)");
    }

    #[test]
    fn cookies_and_tokens_are_found() {
        assert_eq!(
            cookie_value("a=1; review-panel-80=abc ; b=2", "review-panel-80"),
            Some("abc")
        );
        assert_eq!(cookie_value("review-panel-81=abc", "review-panel-80"), None);
        assert_eq!(
            take_token("token=x&path=a"),
            (Some("x"), "path=a".to_owned())
        );
        assert_eq!(take_token("path=a"), (None, "path=a".to_owned()));
    }
}
