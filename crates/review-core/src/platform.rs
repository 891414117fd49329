//! Platform detection: which review guides a pull request's changed paths select.
//!
//! Seed 004's table maps file extensions to a platform and its guide. A pull
//! request that touches several platforms gets every matching guide; one that
//! touches none gets [`GENERIC_GUIDE`].
//!
//! Decisions where the seed is silent:
//! - Extensions match case-insensitively (`Main.SWIFT`, `App.TS`).
//! - Plain `.js` (and `.mjs`, `.cjs`) does **not** select React: the seed lists
//!   only `.tsx`, `.ts` and `.jsx`, and `.js` is just as often a bundler config,
//!   a Node server or a vendored bundle. `.d.ts` is TypeScript and does count.
//! - Paths inside vendored or fetched dependency directories (`vendor/`,
//!   `node_modules/`, `third_party/`, `Pods/`, `Carthage/`, at any depth) select
//!   nothing: a `go mod vendor` or a `pod install` does not make a pull request
//!   a Go or iOS change. If only such paths change, the generic guide is used.

use serde::Serialize;

/// The guide used when no platform is detected.
pub const GENERIC_GUIDE: &str = "GENERIC_CODE_REVIEW.md";

/// Directory names whose contents are third-party code.
const VENDORED_DIRECTORIES: [&str; 5] =
    ["vendor", "node_modules", "third_party", "Pods", "Carthage"];

/// A platform with its own review guide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Swift / SwiftUI.
    Ios,
    /// Kotlin / Compose (and Gradle Kotlin scripts).
    Android,
    /// Go web services.
    Golang,
    /// React web apps in TypeScript or JSX.
    React,
}

impl Platform {
    /// All platforms, in the seed's order (the order guides are layered in).
    pub const ALL: [Platform; 4] = [
        Platform::Ios,
        Platform::Android,
        Platform::Golang,
        Platform::React,
    ];

    /// The platform's short name (`ios`, `android`, `golang`, `react`).
    pub const fn name(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
            Platform::Golang => "golang",
            Platform::React => "react",
        }
    }

    /// The file name of the platform's review guide.
    pub const fn guide(self) -> &'static str {
        match self {
            Platform::Ios => "IOS_CODE_REVIEW.md",
            Platform::Android => "ANDROID_CODE_REVIEW.md",
            Platform::Golang => "GOLANG_CODE_REVIEW.md",
            Platform::React => "REACT_CODE_REVIEW.md",
        }
    }

    /// The platform a single path selects, if any (see the module notes).
    pub fn of_path(path: &str) -> Option<Platform> {
        let path = path.trim();
        let mut segments = path
            .split(['/', '\\'])
            .filter(|segment| !segment.is_empty());
        let file_name = segments.next_back()?;
        if segments.any(|directory| VENDORED_DIRECTORIES.contains(&directory)) {
            return None;
        }
        let (stem, extension) = file_name.rsplit_once('.')?;
        if stem.is_empty() {
            return None; // a dotfile such as `.go` has no extension
        }
        match extension.to_ascii_lowercase().as_str() {
            "swift" => Some(Platform::Ios),
            "kt" | "kts" => Some(Platform::Android),
            "go" => Some(Platform::Golang),
            "tsx" | "ts" | "jsx" => Some(Platform::React),
            _ => None,
        }
    }
}

/// The platforms a set of changed paths selects and the guides to layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// Distinct platforms, in [`Platform::ALL`] order; empty when none matched.
    pub platforms: Vec<Platform>,
    /// One guide per platform, or just [`GENERIC_GUIDE`] when no platform matched.
    pub guides: Vec<&'static str>,
}

/// Detects the platforms of a pull request from its changed paths.
pub fn detect<I, S>(paths: I) -> Detection
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut found = [false; Platform::ALL.len()];
    for path in paths {
        if let Some(platform) = Platform::of_path(path.as_ref()) {
            found[platform as usize] = true;
        }
    }
    let platforms: Vec<Platform> = Platform::ALL
        .into_iter()
        .filter(|platform| found[*platform as usize])
        .collect();
    let guides = if platforms.is_empty() {
        vec![GENERIC_GUIDE]
    } else {
        platforms.iter().map(|platform| platform.guide()).collect()
    };
    Detection { platforms, guides }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_table() {
        for (path, platform) in [
            ("App/ContentView.swift", Platform::Ios),
            ("app/src/main/java/Main.kt", Platform::Android),
            ("app/build.gradle.kts", Platform::Android),
            ("cmd/server/main.go", Platform::Golang),
            ("src/App.tsx", Platform::React),
            ("src/api.ts", Platform::React),
            ("src/Button.jsx", Platform::React),
            ("types/index.d.ts", Platform::React),
        ] {
            assert_eq!(Platform::of_path(path), Some(platform), "{path}");
        }
    }

    #[test]
    fn decisions() {
        assert_eq!(Platform::of_path("src/App.TSX"), Some(Platform::React));
        assert_eq!(Platform::of_path("Sources/Main.Swift"), Some(Platform::Ios));
        for path in [
            "webpack.config.js",
            "server/index.mjs",
            "vendor/github.com/pkg/errors/errors.go",
            "web/node_modules/react/index.d.ts",
            "ios/Pods/Alamofire/Source/Session.swift",
            "Makefile",
            ".go",
            "go",
            "docs/",
            "",
        ] {
            assert_eq!(Platform::of_path(path), None, "{path}");
        }
        // A directory merely named like a vendored one elsewhere in the name is fine.
        assert_eq!(
            Platform::of_path("vendoring/main.go"),
            Some(Platform::Golang)
        );
    }

    #[test]
    fn several_platforms_several_guides_in_seed_order() {
        let detection = detect([
            "web/src/App.tsx",
            "api/main.go",
            "api/handler.go",
            "README.md",
        ]);
        assert_eq!(detection.platforms, [Platform::Golang, Platform::React]);
        assert_eq!(
            detection.guides,
            ["GOLANG_CODE_REVIEW.md", "REACT_CODE_REVIEW.md"]
        );
    }

    #[test]
    fn nothing_matched_is_the_generic_guide() {
        let detection = detect(["README.md", "vendor/x/y.go"]);
        assert!(detection.platforms.is_empty());
        assert_eq!(detection.guides, [GENERIC_GUIDE]);
        assert_eq!(detect(Vec::<String>::new()).guides, [GENERIC_GUIDE]);
    }
}
