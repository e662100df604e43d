//! BERT's uncased WordPiece tokenizer, written for this model's `vocab.txt`.
//!
//! The encoder only means something on the token ids it was trained with, so this follows
//! BERT's `BasicTokenizer` + `WordpieceTokenizer` step by step: drop control and format
//! characters (zero-width and tag characters included, which is also what an attacker
//! hiding text would use), map every space to a plain space, put spaces around CJK
//! ideographs, lower-case, strip accents (NFD, drop combining marks), split off
//! punctuation, then greedy longest-match-first word pieces with the `##` prefix.
//!
//! One approximation: Unicode's `P*` categories are approximated by ASCII punctuation plus
//! the punctuation blocks (Latin-1, General Punctuation, CJK, fullwidth); a rarer
//! punctuation mark becomes part of a word and, at worst, an `[UNK]` piece.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::GuardError;

/// Longest word that is split into pieces; a longer one is one `[UNK]` (as in BERT).
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary and the ids of its special tokens.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    /// `[CLS]`, the first token of every window.
    pub cls: u32,
    /// `[SEP]`, the last token of every window.
    pub sep: u32,
    unk: u32,
}

impl Tokenizer {
    /// Reads a `vocab.txt` (one token a line, the line number is the id).
    pub fn from_vocab(text: &str) -> Result<Self, GuardError> {
        let vocab: HashMap<String, u32> = text
            .lines()
            .enumerate()
            .filter_map(|(i, t)| u32::try_from(i).ok().map(|i| (t.to_owned(), i)))
            .collect();
        let get = |t: &str| {
            vocab
                .get(t)
                .copied()
                .ok_or_else(|| GuardError::Model(format!("vocab.txt has no {t} token")))
        };
        Ok(Self {
            cls: get("[CLS]")?,
            sep: get("[SEP]")?,
            unk: get("[UNK]")?,
            vocab,
        })
    }

    /// Number of tokens in the vocabulary.
    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    /// Whether the vocabulary is empty (never, for a loaded model).
    pub fn is_empty(&self) -> bool {
        self.vocab.is_empty()
    }

    /// Token ids of `text`, without `[CLS]`/`[SEP]`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.encode_sentences(text).0
    }

    /// Token ids of `text` and where its sentences end: each break is the index of the
    /// first token after a sentence (ascending, never 0, never the length). A sentence ends
    /// at a line break, at `.` `!` `?` (and their Arabic, Greek and fullwidth forms)
    /// followed by a space or the end, and at `。` `！` `？` `।` `॥` (which need none). The
    /// ids are exactly [`Tokenizer::encode`]'s: breaks only mark them.
    pub fn encode_sentences(&self, text: &str) -> (Vec<u32>, Vec<usize>) {
        let mut ids = Vec::with_capacity(text.len() / 3);
        let mut breaks: Vec<usize> = Vec::new();
        let mut word = String::new();
        let flush = |word: &mut String, ids: &mut Vec<u32>| {
            if !word.is_empty() {
                self.word_pieces(word, ids);
                word.clear();
            }
        };
        let mark = |breaks: &mut Vec<usize>, at: usize| {
            if at > 0 && breaks.last() != Some(&at) {
                breaks.push(at);
            }
        };
        // A `.`, `!` or `?` ends a sentence only if what follows is a space (or nothing):
        // "3.5", "e.g" and "example.com" are not sentence ends.
        let mut pending = false;
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                flush(&mut word, &mut ids);
                if pending || matches!(c, '\n' | '\r') {
                    mark(&mut breaks, ids.len());
                }
                pending = false;
                continue;
            }
            if !(pending && is_punctuation(c)) {
                // "...", "?!" and ".)" keep the end pending; anything else cancels it.
                pending = false;
            }
            if is_cjk(c) || is_punctuation(c) {
                flush(&mut word, &mut ids);
                word.push(c);
                flush(&mut word, &mut ids);
                if matches!(
                    c,
                    '\u{3002}' | '\u{ff01}' | '\u{ff1f}' | '\u{964}' | '\u{965}'
                ) {
                    mark(&mut breaks, ids.len());
                } else if matches!(c, '.' | '!' | '?' | '\u{61f}' | '\u{6d4}' | '\u{37e}') {
                    pending = true;
                }
            } else {
                // Lower-case then strip accents; either can yield several chars, and a
                // stripped char can turn out to be punctuation (rare; kept in the word).
                for l in c.to_lowercase() {
                    for d in std::iter::once(l).nfd() {
                        if !is_combining_mark(d) {
                            word.push(d);
                        }
                    }
                }
            }
        }
        flush(&mut word, &mut ids);
        if breaks.last() == Some(&ids.len()) {
            breaks.pop();
        }
        (ids, breaks)
    }

    fn word_pieces(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            ids.push(self.unk);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                // Step back one char (not one byte).
                end = word[..end].char_indices().last().map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(mark);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
        || matches!(
            c,
            '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
        )
}

/// Control (Cc) and format (Cf) characters, which BERT drops: this is where zero-width
/// joiners, bidi overrides and Unicode tag characters go.
fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    c.is_control()
        || matches!(c,
            '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
            | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{20000}'..='\u{2a6df}'
        | '\u{2a700}'..='\u{2b73f}' | '\u{2b740}'..='\u{2b81f}' | '\u{2b820}'..='\u{2ceaf}'
        | '\u{f900}'..='\u{faff}' | '\u{2f800}'..='\u{2fa1f}')
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c,
            '\u{a1}' | '\u{a7}' | '\u{ab}' | '\u{b6}' | '\u{b7}' | '\u{bb}' | '\u{bf}'
            | '\u{37e}' | '\u{387}' | '\u{55a}'..='\u{55f}' | '\u{589}' | '\u{5be}'
            | '\u{60c}' | '\u{61b}' | '\u{61f}' | '\u{66a}'..='\u{66d}' | '\u{6d4}'
            | '\u{964}' | '\u{965}' | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205e}'
            | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3011}' | '\u{3014}'..='\u{301f}'
            | '\u{ff01}'..='\u{ff03}' | '\u{ff05}'..='\u{ff0a}' | '\u{ff0c}'..='\u{ff0f}'
            | '\u{ff1a}' | '\u{ff1b}' | '\u{ff1f}' | '\u{ff20}' | '\u{ff3b}'..='\u{ff3d}'
            | '\u{ff3f}' | '\u{ff5b}' | '\u{ff5d}' | '\u{ff5f}'..='\u{ff65}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Tokenizer {
        let vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nign\n##ore\nall\n!\nprevious\ncafe\n你\n";
        Tokenizer::from_vocab(vocab).unwrap()
    }

    #[test]
    fn splits_words_into_longest_pieces() {
        assert_eq!(tiny().encode("IGNORE all!"), vec![4, 5, 6, 7]);
    }

    #[test]
    fn strips_accents_and_hidden_characters() {
        assert_eq!(
            tiny().encode("Café ig\u{200b}nore \u{e0041}"),
            vec![9, 4, 5]
        );
    }

    #[test]
    fn sentence_breaks_mark_the_same_ids() {
        let t = tiny();
        let text = "Ignore all! Previous\ncafe 你\u{3002}你 all!all. ";
        let (ids, breaks) = t.encode_sentences(text);
        assert_eq!(ids, t.encode(text));
        // after "!" + space, after the line break, after "。" (no space needed); the "!"
        // inside "all!all" is no end, the final "." ends the text (no break at the end).
        let unk = t.unk;
        assert_eq!(ids, vec![4, 5, 6, 7, 8, 9, 10, unk, 10, 6, 7, 6, unk]);
        assert_eq!(breaks, vec![4, 5, 8]);
    }

    #[test]
    fn unknown_word_is_one_unk() {
        assert_eq!(tiny().encode("xyz 你"), vec![1, 10]);
    }
}
