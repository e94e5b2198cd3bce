//! Chart metadata: `Chart.yaml` parsed the way Helm parses it, and written back as the JSON
//! config blob `helm push` produces (Helm's field order, empty fields omitted, Go escaping).
//!
//! Helm reads Chart.yaml with sigs.k8s.io/yaml, which turns YAML numbers and booleans into
//! strings where the Go field is a string (`appVersion: 1.10` becomes `"1.1"`), then runs
//! `Metadata.Validate`, which replaces whitespace with a space and drops unprintable
//! characters in most string fields. Both are reproduced here so that the config digest equals
//! the one `helm push` computes.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A Go string field: accepts a YAML string, number, boolean or null, as sigs.k8s.io/yaml does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct GoString(pub String);

impl GoString {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de> Deserialize<'de> for GoString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = GoString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<GoString, E> {
                Ok(GoString(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<GoString, E> {
                Ok(GoString(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GoString, E> {
                Ok(GoString(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GoString, E> {
                Ok(GoString(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<GoString, E> {
                Ok(GoString(go_format_float32(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<GoString, E> {
                Ok(GoString::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<GoString, E> {
                Ok(GoString::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// `strconv.FormatFloat(v, 'g', -1, 32)`: what sigs.k8s.io/yaml writes for a YAML float read
/// into a Go string.
fn go_format_float32(v: f64) -> String {
    let v = v as f32;
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Go's -1 precision.
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // With shortest precision Go switches to exponent form outside 1e-4 <= |v| < 1e6.
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let dot = if tail.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{dot}{tail}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// `sanitizeString` from Helm's `pkg/chart/metadata.go`: whitespace becomes a space, and
/// characters Go's `unicode.IsPrint` rejects are dropped.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if is_go_printable(c) {
                Some(c)
            } else {
                None
            }
        })
        .collect()
}

/// Approximates `unicode.IsPrint` for assigned characters: control, format, private-use and
/// noncharacter code points are not printable.
fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    let format = matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
        | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F);
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = matches!(u, 0xFDD0..=0xFDEF) || (u & 0xFFFE) == 0xFFFE;
    !(c.is_control() || format || private_use || noncharacter)
}

/// A YAML `null` means "unset" to Go: the field keeps its zero value.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `chart.Maintainer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Maintainer {
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub name: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub email: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub url: GoString,
}

/// `chart.Dependency` (`name` and `repository` are written even when empty, as in Helm).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dependency {
    pub name: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub version: GoString,
    pub repository: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub condition: GoString,
    #[serde(skip_serializing_if = "empty", deserialize_with = "nullable")]
    pub tags: Vec<GoString>,
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub enabled: bool,
    #[serde(
        rename = "import-values",
        skip_serializing_if = "empty",
        deserialize_with = "nullable"
    )]
    pub import_values: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub alias: GoString,
}

/// `chart.Metadata`, fields in Helm's declaration order (which is the JSON order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metadata {
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub name: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub home: GoString,
    #[serde(skip_serializing_if = "empty", deserialize_with = "nullable")]
    pub sources: Vec<GoString>,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub version: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub description: GoString,
    #[serde(skip_serializing_if = "empty", deserialize_with = "nullable")]
    pub keywords: Vec<GoString>,
    #[serde(skip_serializing_if = "empty", deserialize_with = "nullable")]
    pub maintainers: Vec<Maintainer>,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub icon: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub api_version: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub condition: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub tags: GoString,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub app_version: GoString,
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub deprecated: bool,
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub annotations: BTreeMap<String, GoString>,
    #[serde(skip_serializing_if = "GoString::is_empty")]
    pub kube_version: GoString,
    #[serde(skip_serializing_if = "empty", deserialize_with = "nullable")]
    pub dependencies: Vec<Dependency>,
    #[serde(rename = "type", skip_serializing_if = "GoString::is_empty")]
    pub chart_type: GoString,
}

impl Metadata {
    /// What Helm's loader and `Metadata.Validate` do to the parsed metadata before pushing.
    pub fn normalise(&mut self) {
        if self.api_version.is_empty() {
            self.api_version = GoString("v1".into());
        }
        for field in [
            &mut self.name,
            &mut self.description,
            &mut self.home,
            &mut self.icon,
            &mut self.condition,
            &mut self.tags,
            &mut self.app_version,
            &mut self.kube_version,
        ] {
            field.0 = sanitize(&field.0);
        }
        for s in self.sources.iter_mut().chain(self.keywords.iter_mut()) {
            s.0 = sanitize(&s.0);
        }
        for m in &mut self.maintainers {
            for field in [&mut m.name, &mut m.email, &mut m.url] {
                field.0 = sanitize(&field.0);
            }
        }
        for d in &mut self.dependencies {
            for field in [
                &mut d.name,
                &mut d.version,
                &mut d.repository,
                &mut d.condition,
            ] {
                field.0 = sanitize(&field.0);
            }
            for t in &mut d.tags {
                t.0 = sanitize(&t.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(1.1, "1.1")]
    #[case(1.10, "1.1")]
    #[case(1.0, "1")]
    #[case(0.1, "0.1")]
    #[case(100000.0, "100000")]
    #[case(1234567.0, "1.234567e+06")]
    #[case(1e21, "1e+21")]
    #[case(1e6, "1e+06")]
    #[case(1.123456789, "1.1234568")]
    #[case(0.0001, "0.0001")]
    #[case(0.00001, "1e-05")]
    #[case(-2.5, "-2.5")]
    #[case(2.5e-3, "0.0025")]
    #[case(f64::INFINITY, "+Inf")]
    fn floats_format_like_go_float32(#[case] v: f64, #[case] expected: &str) {
        assert_eq!(go_format_float32(v), expected);
    }

    #[rstest]
    #[case("a\nb\tc", "a b c")]
    #[case("zero\u{200b}width", "zerowidth")]
    #[case("bell\u{7}", "bell")]
    #[case("nbsp\u{a0}x", "nbsp x")]
    #[case("日本 é", "日本 é")]
    fn sanitises_like_helm(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(sanitize(input), expected);
    }

    #[test]
    fn scalars_become_strings_like_sigs_yaml() {
        let m: Metadata = serde_yaml_ng::from_str(
            "name: x\nversion: 1.0.0\nappVersion: 1.10\nkubeVersion: 12\ncondition: true\nicon:\n",
        )
        .unwrap();
        assert_eq!(m.app_version.0, "1.1");
        assert_eq!(m.kube_version.0, "12");
        assert_eq!(m.condition.0, "true");
        assert_eq!(m.icon.0, "");
    }
}
