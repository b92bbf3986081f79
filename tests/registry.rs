//! The rule registry is where a rule is listed; every other list of rules is checked against it
//! here, so that a rule added (or renamed) and left out of README's table, docs/diagnoses.md,
//! docs/diagnose-json.md's id list or the shipped alert rules fails the tests.

use gpuwatch::rules::{all_rules, RuleId};

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The backquoted words of `text` that name a rule, known or not (`[a-z0-9-]+`).
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
        .map(String::from)
        .collect()
}

fn ids() -> Vec<&'static str> {
    all_rules().iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn the_registry_holds_every_id_once_in_the_ids_order() {
    let registry: Vec<RuleId> = all_rules().iter().map(|r| r.id).collect();
    assert_eq!(registry, RuleId::ALL, "RuleId::ALL and the registry agree");
}

/// README's "What it diagnoses" table: a row per rule (two rules may share one), and no row
/// naming a rule that is not registered.
#[test]
fn readme_lists_every_rule_and_no_other() {
    let readme = read("README.md");
    let table = readme
        .split("## What it diagnoses")
        .nth(1)
        .and_then(|s| s.split("\n\n").find(|p| p.trim_start().starts_with('|')))
        .expect("README has the table");
    let mut named = Vec::new();
    for row in table.lines().skip(2) {
        let first = row.split('|').nth(1).unwrap_or("");
        named.extend(quoted(first));
    }
    for id in ids() {
        assert!(named.iter().any(|n| n == id), "README's table lacks `{id}`");
    }
    for n in &named {
        assert!(
            ids().contains(&n.as_str()),
            "README's table names `{n}`, which no rule has"
        );
    }
}

/// docs/diagnoses.md: a section per rule ("## `id` — …"), and none for an unknown one.
#[test]
fn diagnoses_md_has_a_section_per_rule() {
    let doc = read("docs/diagnoses.md");
    let mut named = Vec::new();
    for heading in doc.lines().filter(|l| l.starts_with("## `")) {
        let title = heading.split(" — ").next().unwrap_or(heading);
        named.extend(quoted(title));
    }
    for id in ids() {
        assert!(
            named.iter().any(|n| n == id),
            "docs/diagnoses.md has no section for `{id}`"
        );
    }
    for n in &named {
        assert!(
            ids().contains(&n.as_str()),
            "docs/diagnoses.md has a section for `{n}`, which no rule has"
        );
    }
}

/// docs/diagnoses.md's MIG table says where each rule judges on a MIG GPU, as the registry does.
#[test]
fn diagnoses_md_says_where_each_rule_judges_on_mig_as_the_registry_does() {
    let doc = read("docs/diagnoses.md");
    let table = doc
        .split("## MIG instances")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("docs/diagnoses.md has a MIG section");
    for rule in gpuwatch::rules::all_rules() {
        let id = rule.id.as_str();
        let row = table
            .lines()
            .find(|l| {
                l.starts_with('|')
                    && quoted(l.split('|').nth(1).unwrap_or(""))
                        .iter()
                        .any(|n| n == id)
            })
            .unwrap_or_else(|| panic!("the MIG table has no row for `{id}`"));
        let said = row.split('|').nth(2).unwrap_or("").trim();
        assert_eq!(said, rule.mig.words(), "`{id}` on MIG");
    }
}

/// docs/diagnose-json.md names the ids a finding's `rule` takes: exactly the registry's.
#[test]
fn diagnose_json_md_lists_exactly_the_registered_ids() {
    let doc = read("docs/diagnose-json.md");
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `rule` | string |"))
        .expect("the rule row");
    let listed = quoted(row.split('|').nth(3).unwrap());
    let mut want: Vec<String> = ids().into_iter().map(String::from).collect();
    let mut got = listed.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want, "docs/diagnose-json.md's rule ids");
}

/// The shipped alert rules match on `finding="id"`: every id they name is a rule.
#[test]
fn alert_rules_name_only_registered_rules() {
    let alerts = read("docs/deploy/alerts.yml");
    let mut seen = 0;
    for part in alerts.split("finding=\"").skip(1) {
        let id = part.split('"').next().unwrap();
        assert!(
            ids().contains(&id),
            "alerts.yml matches finding=\"{id}\", which no rule has"
        );
        seen += 1;
    }
    assert!(seen > 0, "alerts.yml matches findings");
}

/// README's `--demo` row names every scenario `--demo` takes (a rule's own among them) and
/// no other.
#[test]
fn readme_names_every_demo_scenario() {
    let readme = read("README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `gpuwatch --demo"))
        .expect("README's command table has the --demo row");
    let named: Vec<String> = row
        .split('`')
        .skip(3) // the command itself
        .step_by(2)
        .map(|w| w.trim_end_matches(":H/N").to_string())
        .collect();
    let known: Vec<&str> = gpuwatch::source::sim::scenarios()
        .iter()
        .map(|(name, _)| *name)
        .collect();
    for name in &known {
        assert!(
            named.iter().any(|n| n == name),
            "README's --demo row lacks `{name}`"
        );
    }
    for n in named.iter().filter(|n| {
        n.chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
    }) {
        assert!(
            known.contains(&n.as_str()),
            "README's --demo row names `{n}`, which is no scenario"
        );
    }
}
