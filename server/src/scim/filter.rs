//! SCIM filters (RFC 7644 §3.4.2.2): the grammar is the `scim-filter` crate's parser; matching is done here,
//! because the crate's own matcher reads a string that looks like a number or a date as one (`value eq "2"` never
//! matches "2") and compares case by case where SCIM's attributes are case-insensitive (`userName`, `emails`).
use super::error::ScimError;
use scim_filter::parser::{AttrExpData, AttrPath, CompValue, CompareOp, Filter, ValFilter};
use serde_json::Value;

/// A parsed filter, matched against resources as JSON.
pub struct Parsed<'a>(Filter<'a>);

/// The longest filter taken (a directory's own are one or two comparisons, a few dozen characters).
pub const MAX_LENGTH: usize = 1024;
/// The deepest nesting of groups (`( … )`, `[ … ]`) taken. The crate's parser backtracks, and its work doubles
/// with each level (depth 20 took 27 s): bounded here, before it runs, a filter parses in microseconds.
pub const MAX_DEPTH: usize = 3;

pub fn parse(text: &str) -> Result<Parsed<'_>, ScimError> {
    let invalid = |why: &str| ScimError::invalid_filter(format!("'{text}' {why}"));
    if text.len() > MAX_LENGTH {
        let shown: String = text.chars().take(40).collect();
        return Err(ScimError::invalid_filter(format!("'{shown}…' is longer than {MAX_LENGTH} bytes")));
    }
    if depth(text) > MAX_DEPTH {
        return Err(invalid(&format!("nests groups deeper than {MAX_DEPTH}")));
    }
    match scim_filter::parser::filter(text.trim()) {
        Ok(("", filter)) => Ok(Parsed(filter)),
        Ok((rest, _)) => Err(invalid(&format!("does not parse from '{rest}'"))),
        Err(_) => Err(invalid("is not a SCIM filter")),
    }
}

/// The deepest nesting of parentheses and brackets outside quoted strings.
fn depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut quoted, mut escaped) = (0usize, 0usize, false, false);
    for c in text.chars() {
        match (quoted, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, _, '"') => quoted = !quoted,
            (false, _, '(' | '[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, ')' | ']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

impl Parsed<'_> {
    pub fn matches(&self, resource: &Value) -> bool {
        filter(&self.0, resource)
    }

    /// `userName eq "…"` or `externalId eq "…"` — what a directory asks before each change of a person — as the
    /// attribute and the value, so that the person is looked up alone.
    pub fn one_person(&self) -> Option<(OnePerson, &str)> {
        let Filter::AttrExp(AttrExpData::Compare(path, CompareOp::Equal, CompValue::String(value))) = &self.0 else {
            return None;
        };
        let name: &str = path.attr_name();
        if path.sub_attr().is_some() {
            return None;
        }
        if name.eq_ignore_ascii_case("userName") {
            Some((OnePerson::UserName, value))
        } else if name.eq_ignore_ascii_case("externalId") {
            Some((OnePerson::ExternalId, value))
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnePerson {
    UserName,
    ExternalId,
}

fn filter(f: &Filter, resource: &Value) -> bool {
    match f {
        Filter::AttrExp(e) => attr_exp(e, resource),
        Filter::LogExp(l) => log_exp(l, resource),
        Filter::ValuePath(v) => elements(resource, v.attr_path()).iter().any(|e| val_filter(v.val_filter(), e)),
        Filter::Sub(not, inner) => filter(inner, resource) != *not,
    }
}

fn val_filter(f: &ValFilter, element: &Value) -> bool {
    match f {
        ValFilter::AttrExp(e) => attr_exp(e, element),
        ValFilter::LogExp(l) => log_exp(l, element),
        ValFilter::SubFilter(not, inner) => val_filter(inner, element) != *not,
    }
}

fn log_exp(l: &scim_filter::parser::LogExpData, resource: &Value) -> bool {
    let left = filter(&l.left, resource);
    if l.log_exp_operator.is_or() { left || filter(&l.right, resource) } else { left && filter(&l.right, resource) }
}

/// The attribute's values in `resource`: the attribute itself (any case), in the resource or in one of its
/// extensions, each element of a multi-valued one.
fn elements<'v>(resource: &'v Value, path: &AttrPath) -> Vec<&'v Value> {
    let name: &str = path.attr_name();
    let Some(object) = resource.as_object() else { return Vec::new() };
    let found = object.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v).or_else(|| {
        object
            .iter()
            .filter(|(k, _)| k.to_ascii_lowercase().starts_with("urn:"))
            .find_map(|(_, ext)| ext.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
    });
    match found {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(value) => vec![value],
    }
}

fn values<'v>(resource: &'v Value, path: &AttrPath) -> Vec<&'v Value> {
    let found = elements(resource, path);
    let Some(sub) = path.sub_attr() else { return found };
    let sub: &str = sub;
    found
        .into_iter()
        .filter_map(|e| e.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(sub)).map(|(_, v)| v))
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().collect(),
            Value::Null => Vec::new(),
            other => vec![other],
        })
        .collect()
}

fn attr_exp(e: &AttrExpData, resource: &Value) -> bool {
    match e {
        AttrExpData::Present(path) => values(resource, path).iter().any(|v| !is_empty(v)),
        AttrExpData::Compare(path, op, CompValue::Null) => {
            let none = values(resource, path).is_empty();
            matches!(op, CompareOp::Equal) == none
        }
        AttrExpData::Compare(path, CompareOp::NotEqual, value) => {
            !values(resource, path).iter().any(|v| compare(v, &CompareOp::Equal, value, exact(path)))
        }
        AttrExpData::Compare(path, op, value) => {
            values(resource, path).iter().any(|v| compare(v, op, value, exact(path)))
        }
    }
}

fn is_empty(v: &Value) -> bool {
    matches!(v, Value::Null) || v.as_str().is_some_and(str::is_empty) || v.as_array().is_some_and(Vec::is_empty)
}

/// `id` and `externalId` are compared exactly (RFC 7643: `caseExact`); every other string in any case.
fn exact(path: &AttrPath) -> bool {
    let name: &str = path.attr_name();
    path.sub_attr().is_none() && (name.eq_ignore_ascii_case("id") || name.eq_ignore_ascii_case("externalId"))
}

fn compare(value: &Value, op: &CompareOp, against: &CompValue, exact: bool) -> bool {
    use std::cmp::Ordering;
    let ordering: Option<Ordering> = match (value, against) {
        (Value::String(s), CompValue::String(t)) => {
            let (s, t) = if exact { (s.to_string(), t.to_string()) } else { (s.to_lowercase(), t.to_lowercase()) };
            return match op {
                CompareOp::Contains => s.contains(&t),
                CompareOp::StartsWith => s.starts_with(&t),
                CompareOp::EndsWith => s.ends_with(&t),
                _ => ordered(op, Some(s.cmp(&t))),
            };
        }
        (Value::Bool(b), CompValue::True) => Some(b.cmp(&true)),
        (Value::Bool(b), CompValue::False) => Some(b.cmp(&false)),
        (Value::Number(n), CompValue::Number(d)) => {
            n.as_f64().zip(d.to_string().parse::<f64>().ok()).and_then(|(a, b)| a.partial_cmp(&b))
        }
        _ => None,
    };
    ordered(op, ordering)
}

fn ordered(op: &CompareOp, ordering: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match (op, ordering) {
        (_, None) => false,
        (CompareOp::Equal, Some(o)) => o == Equal,
        (CompareOp::NotEqual, Some(o)) => o != Equal,
        (CompareOp::GreaterThan, Some(o)) => o == Greater,
        (CompareOp::GreaterThanOrEqual, Some(o)) => o != Less,
        (CompareOp::LessThan, Some(o)) => o == Less,
        (CompareOp::LessThanOrEqual, Some(o)) => o != Greater,
        (CompareOp::Contains | CompareOp::StartsWith | CompareOp::EndsWith, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_counted_outside_strings_only() {
        assert_eq!(depth(r#"emails[type eq "work" and value co "(["]"#), 1);
        assert_eq!(depth(r#"not (a eq "x\"((" or (b pr))"#), 2);
        assert_eq!(depth("userName eq \"sato\""), 0);
    }

    #[test]
    fn a_filter_nested_deeper_than_the_bound_is_refused_before_it_is_parsed() {
        let nested = |n: usize| format!("{}userName eq \"a\"{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        let refused = parse(&nested(20)).err().expect("refused");
        assert!(refused.detail.contains("deeper than"), "{}", refused.detail);
        assert!(parse(&format!("userName eq \"{}\"", "a".repeat(MAX_LENGTH))).is_err());
    }

    /// The worst a directory may send within the bounds — as long as allowed, every group as deep as allowed —
    /// parses at once (the attack it replaces took 27 s; the bound here leaves a slow machine 100 times over).
    #[test]
    fn the_worst_filter_within_the_bounds_parses_at_once() {
        let group = format!("{}a eq \"x\"{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        let mut worst = group.clone();
        while worst.len() + group.len() + 4 <= MAX_LENGTH {
            worst = format!("{worst} or {group}");
        }
        let started = std::time::Instant::now();
        assert!(parse(&worst).is_ok(), "{worst}");
        let took = started.elapsed();
        eprintln!("the worst filter within the bounds ({} bytes) parsed in {took:?}", worst.len());
        assert!(took < std::time::Duration::from_millis(250), "{took:?}");
    }
}
