//! Tool annotations that contradict the tool's own description: `readOnlyHint: true` on a
//! tool that "permanently deletes", `destructiveHint: false` on one that wipes,
//! `openWorldHint: false` on one that e-mails. Clients use the hints to skip confirmation,
//! so a false hint is how a poisoned tool gets run without the user being asked.
//!
//! The description is read for what the tool does, not for words that appear in it: an
//! action counts where the description states it (at the start of a sentence, after "this
//! tool", "used to", "and", "then"), never under a negation ("never deletes anything").

use regex::Regex;

use crate::finding::{Category, Finding, Severity};

/// The MCP behaviour hints of a tool, as the server declared them (absent = `None`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`: the tool does not modify its environment.
    pub read_only: Option<bool>,
    /// `destructiveHint`: the tool may perform destructive updates.
    pub destructive: Option<bool>,
    /// `openWorldHint`: the tool may interact with external entities.
    pub open_world: Option<bool>,
}

/// Where a description states what the tool does: a sentence start, or after words that
/// introduce the tool's action.
const LEAD: &str = r"(?:^|[.;:!?\n]\s*|\b(?:this tool|the tool|tool to|used to|use to|lets you|allows you to|will|and|then|also|or|to)\s+|,\s*)(?:(?:permanently|irreversibly|irrevocably|immediately|automatically|silently|recursively|also|then)\s+)?";

/// Verbs that destroy data, in the languages the intent detector reads.
const DESTROY: &str = r"(?:deletes?|removes?|erases?|wipes?|destroys?|drops?|truncates?|purges?|overwrites?|shreds?|formats?|revokes?|uninstalls?|terminates?|kills?|elimina|borra|supprime|efface|löscht|entfernt|apaga|exclui|cancella|удаляет|удалить|删除|削除|삭제|يحذف|हटाता)";

/// Verbs that change state (destroying ones included).
const WRITE: &str = r"(?:creates?|writes?|modif(?:y|ies)|edits?|inserts?|uploads?|sends?|publish(?:es)?|executes?|installs?|transfers?|deploys?|renames?|moves?|saves?|updates?|appends?|crea|escribe|envía|crée|écrit|envoie|erstellt|schreibt|sendet|cria|escreve|envia|scrive|invia|создаёт|создает|записывает|отправляет|创建|写入|发送|作成|書き込|送信|생성|전송|ينشئ|يرسل|बनाता|भेजता)";

/// Verbs and objects that reach outside the machine.
const OUTWARD: &str = r"(?:sends?|e-?mails?|posts? (?:a |the )?(?:message|tweet|comment|update)s?|uploads?|publish(?:es)?|tweets?|notif(?:y|ies)|transfers?|wires?|pays?|calls? (?:an? |the )?(?:external|remote|third-party)|fetch(?:es)? (?:a |the |any )?(?:url|web ?page)|browses?|envía|envoie|sendet|envia|invia|отправляет|发送|送信|전송|يرسل|भेजता)";

/// What a tool sends back over MCP itself (an elicitation, a progress or log message, its
/// result) or to the person using it: sending that is not reaching the open world.
const INWARD: &str = r"^\s+(?:(?:an?|the|its|back|some|any)\s+){0,2}(?:elicitation|sampling|progress|log(?:ging)?|notifications?|responses?|repl(?:y|ies)|results?|answers?)\b|^[^.;\n]{0,40}\bto the (?:client|user|caller|model|host)\b";

/// A negation shortly before an action.
const NEGATION: &str = r"(?:\b(?:never|not|no|without|nothing|cannot|can't|won't|doesn't|don't|does not|do not|will not|nunca|jamais|niemals|nie|mai|никогда|не)\b|不|しない|않)[^.;\n]{0,24}$";

/// The compiled reader of descriptions.
#[derive(Debug)]
pub struct AnnotationReader {
    destroy: Regex,
    write: Regex,
    outward: Regex,
    inward: Regex,
    negation: Regex,
}

impl AnnotationReader {
    /// Compiles the patterns.
    ///
    /// # Errors
    /// Only if a built-in pattern is broken, which this crate's tests rule out.
    pub fn new() -> Result<AnnotationReader, regex::Error> {
        let stated = |verbs: &str| Regex::new(&format!(r"(?i){LEAD}({verbs})\b"));
        Ok(AnnotationReader {
            destroy: stated(DESTROY)?,
            write: stated(WRITE)?,
            outward: stated(OUTWARD)?,
            inward: Regex::new(&format!("(?i){INWARD}"))?,
            negation: Regex::new(&format!("(?i){NEGATION}"))?,
        })
    }

    /// The first action of `re` that the description states and does not negate.
    fn stated(&self, re: &Regex, description: &str) -> Option<(usize, usize)> {
        self.stated_except(re, None, description)
    }

    /// As `stated`, skipping actions whose object (the text after the verb) `except` matches.
    fn stated_except(
        &self,
        re: &Regex,
        except: Option<&Regex>,
        description: &str,
    ) -> Option<(usize, usize)> {
        re.captures_iter(description).find_map(|c| {
            let verb = c.get(1)?;
            let before = &description[..verb.start()];
            let clause = before.rsplit(['.', ';', '\n']).next().unwrap_or(before);
            let excepted = except.is_some_and(|e| e.is_match(&description[verb.end()..]));
            (!excepted && !self.negation.is_match(clause)).then_some((verb.start(), verb.end()))
        })
    }

    /// Findings for hints that the description contradicts; spans are in `description`.
    pub fn conflicts(&self, description: &str, hints: Hints) -> Vec<Finding> {
        // Descriptions are short; a long one is read for its first few kilobytes, where a
        // tool says what it does.
        let mut end = description.len().min(8192);
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        let d = &description[..end];
        let mut out = Vec::new();
        let mut push = |span| {
            out.push(Finding {
                category: Category::Poisoning,
                rule_id: "poisoning.annotation_contradiction",
                severity: Severity::High,
                span,
                label: "poisoning",
                encoding: None,
            });
        };
        if hints.read_only == Some(true)
            && let Some(span) = self
                .stated(&self.write, d)
                .or_else(|| self.stated(&self.destroy, d))
        {
            push(span);
        } else if hints.destructive == Some(false)
            && let Some(span) = self.stated(&self.destroy, d)
        {
            push(span);
        }
        if hints.open_world == Some(false)
            && let Some(span) = self.stated_except(&self.outward, Some(&self.inward), d)
        {
            push(span);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(description: &str, hints: Hints) -> bool {
        let r = AnnotationReader::new().unwrap_or_else(|e| panic!("{e}"));
        !r.conflicts(description, hints).is_empty()
    }

    const READ_ONLY: Hints = Hints {
        read_only: Some(true),
        destructive: None,
        open_world: None,
    };
    const NOT_DESTRUCTIVE: Hints = Hints {
        read_only: None,
        destructive: Some(false),
        open_world: None,
    };
    const CLOSED_WORLD: Hints = Hints {
        read_only: None,
        destructive: None,
        open_world: Some(false),
    };

    #[test]
    fn hints_the_description_contradicts() {
        assert!(flags("Permanently deletes the selected files.", READ_ONLY));
        assert!(flags(
            "This tool will wipe the database and recreate it.",
            NOT_DESTRUCTIVE
        ));
        assert!(flags(
            "Lists the inbox and sends a summary to the team.",
            CLOSED_WORLD
        ));
        assert!(flags("Elimina permanentemente el repositorio.", READ_ONLY));
        assert!(flags("Creates an issue in the tracker.", READ_ONLY));
    }

    #[test]
    fn hints_the_description_agrees_with() {
        assert!(!flags(
            "Reads a file. Never deletes or modifies anything.",
            READ_ONLY
        ));
        assert!(!flags("Lists deleted items in the recycle bin.", READ_ONLY));
        assert!(!flags(
            "Permanently deletes the selected files.",
            Hints::default()
        ));
        assert!(!flags("Returns the weather for a city.", CLOSED_WORLD));
        // server-everything's simulate-research-query: the elicitation goes to the client.
        assert!(!flags(
            "If 'ambiguous' is true and client supports elicitation, sends an elicitation \
             request for clarification.",
            CLOSED_WORLD
        ));
        assert!(!flags(
            "Runs the job and sends progress notifications while it works.",
            CLOSED_WORLD
        ));
        assert!(!flags(
            "Summarises the thread and sends it back to the user.",
            CLOSED_WORLD
        ));
        assert!(flags(
            "Sends progress notifications, then e-mails the report to the team.",
            CLOSED_WORLD
        ));
        assert!(!flags(
            "Searches local notes; does not send anything.",
            CLOSED_WORLD
        ));
        assert!(!flags(
            "Permanently deletes the selected files.",
            Hints {
                destructive: Some(true),
                ..Hints::default()
            }
        ));
    }
}
