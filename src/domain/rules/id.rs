//! Every rule's id, typed: a misspelt id does not compile. On the wire (findings, recordings,
//! snapshots, the exporter's `finding` label, alert rules) it is the kebab-case string.

use super::RuleId;

/// Declares the registry from its lines (`Fp32 = "fp32", "FP32" => fp32::FP32;`): the typed
/// id `RuleId` with its wire name and short name, `RuleId::ALL` and `RULES`, all in one order,
/// so a rule is registered by one line and its id cannot be left out of a list.
macro_rules! registry {
    ($($variant:ident = $name:literal, $short:literal => $rule:path;)*) => {
        /// The rules gpuwatch knows, as findings and files name them.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize,
        )]
        pub enum RuleId {
            $(#[serde(rename = $name)] $variant,)*
        }

        impl RuleId {
            /// Every id, in the registry's order.
            pub const ALL: [RuleId; [$($name),*].len()] = [$(RuleId::$variant),*];

            /// The id as findings and files write it: `hang`, `mem-growth`.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $name,)*
                }
            }

            /// The short name where the whole one does not fit (a GPU row at 80 columns).
            #[must_use]
            pub const fn short(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $short,)*
                }
            }
        }

        static RULES: [Rule; [$($name),*].len()] = [$($rule),*];
    };
}
pub(super) use registry;

impl RuleId {
    /// The id a finding read from a file names; `None` for one this build does not know (a
    /// file from a newer gpuwatch).
    #[must_use]
    pub fn parse(s: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|id| id.as_str() == s)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<RuleId> for String {
    fn from(id: RuleId) -> String {
        id.as_str().into()
    }
}

/// `finding.rule == RuleId::Hang`: findings keep the id as read (a file may name a rule this
/// build does not know), compared with a typed one.
impl PartialEq<RuleId> for String {
    fn eq(&self, id: &RuleId) -> bool {
        self == id.as_str()
    }
}

impl PartialEq<RuleId> for str {
    fn eq(&self, id: &RuleId) -> bool {
        self == id.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_and_serializes_as_its_string() {
        for id in RuleId::ALL {
            assert_eq!(RuleId::parse(id.as_str()), Some(id));
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                format!("\"{}\"", id.as_str())
            );
        }
        assert_eq!(RuleId::parse("nonesuch"), None);
    }

    /// `rules::demo` finds a rule by its id's place in the registry.
    #[test]
    fn the_registry_lists_every_rule_at_its_ids_place() {
        for (place, id) in RuleId::ALL.into_iter().enumerate() {
            assert_eq!(id as usize, place);
            assert_eq!(super::super::RULES[place].id, id);
        }
    }
}
