//! Secret detectors: provider token formats (with checksums where the format has one),
//! private keys, JWTs, connection strings with passwords, and keyword-context assignments
//! of high-entropy values. Documented example keys and obvious placeholders are not
//! findings.

use crate::entropy::{base62, crc32, is_placeholder, shannon};
use crate::finding::Severity;
use crate::rules::{BASE, RuleDef};

fn not_placeholder(v: &[u8]) -> bool {
    !is_placeholder(v)
}

/// A high-entropy value that is not a placeholder, word or path.
fn random_looking(v: &[u8]) -> bool {
    if is_placeholder(v) || v.len() < 8 {
        return false;
    }
    let has_digit = v.iter().any(u8::is_ascii_digit);
    let has_alpha = v.iter().any(u8::is_ascii_alphabetic);
    let threshold = if v.len() >= 20 { 3.0 } else { 2.7 };
    has_alpha && (has_digit || v.len() >= 20) && shannon(v) >= threshold && !v.starts_with(b"/") && !v.contains(&b' ')
}

/// GitHub's classic tokens end in a CRC-32 of the rest, base62-encoded in six characters.
fn github_checksum(v: &[u8]) -> bool {
    if v.len() != 40 || is_placeholder(v) {
        return false;
    }
    let (body, sum) = v.split_at(34);
    let random = &body[4..];
    base62(crc32(random), 6).as_bytes() == sum || shannon(random) > 3.0
}

fn aws_secret(v: &[u8]) -> bool {
    v.len() == 40 && !is_placeholder(v) && shannon(v) > 4.0 && v.iter().any(u8::is_ascii_digit)
}

fn jwt(v: &[u8]) -> bool {
    // The header must decode to JSON naming an algorithm.
    let header = v.split(|&b| b == b'.').next().unwrap_or_default();
    crate::decode::base64(header).is_some_and(|h| {
        let h = String::from_utf8_lossy(&h).to_ascii_lowercase();
        h.contains("\"alg\"") || h.contains("\"typ\"")
    })
}

fn password_value(v: &[u8]) -> bool {
    v.len() >= 3 && !is_placeholder(v) && !matches!(v.to_ascii_lowercase().as_slice(), b"password" | b"pass" | b"passwd" | b"secret" | b"pwd" | b"root" | b"admin")
}

/// The secret detectors.
pub const RULES: &[RuleDef] = &[
    // --- cloud ---
    RuleDef { id: "secret.aws_access_key", label: "aws_access_key", keywords: &["akia", "asia", "abia", "acca", "a3t"], regex: r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b", group: 1, before: 8, after: 24, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.aws_secret_key", label: "aws_secret_key", severity: Severity::Critical, keywords: &["aws_secret", "secret_access_key", "secretaccesskey", "aws secret", "aws_session_token"], regex: r#"(?i)(?:aws)?[_\-. ]?(?:secret[_\-. ]?access[_\-. ]?key|secret[_\-. ]?key|secretaccesskey)["']?\s*(?:[:=]|:=|=>|\s)\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#, group: 1, before: 16, after: 120, check: Some(aws_secret), ..BASE },
    RuleDef { id: "secret.gcp_api_key", label: "gcp_api_key", keywords: &["aiza"], regex: r"\b(AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)", group: 1, before: 4, after: 48, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.gcp_service_account", label: "gcp_service_account", severity: Severity::Critical, keywords: &["service_account"], regex: r#""type"\s*:\s*"service_account""#, before: 32, after: 32, ..BASE },
    RuleDef { id: "secret.google_oauth_secret", label: "google_oauth_secret", keywords: &["gocspx-"], regex: r"\b(GOCSPX-[A-Za-z0-9_\-]{28})(?:[^A-Za-z0-9_\-]|$)", group: 1, before: 4, after: 40, ..BASE },
    RuleDef { id: "secret.azure_storage_key", label: "azure_storage_key", severity: Severity::Critical, keywords: &["accountkey="], regex: r"AccountKey=([A-Za-z0-9+/]{86}==)", group: 1, after: 110, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.azure_client_secret", label: "azure_client_secret", keywords: &["q~"], regex: r"(?:^|[^A-Za-z0-9_~.\-])([A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})(?:[^A-Za-z0-9_~.\-]|$)", group: 1, before: 8, after: 40, check: Some(random_looking), ..BASE },
    RuleDef { id: "secret.digitalocean_token", label: "digitalocean_token", keywords: &["dop_v1_", "doo_v1_", "dor_v1_"], regex: r"\b(do[opr]_v1_[a-f0-9]{64})\b", group: 1, after: 80, ..BASE },
    RuleDef { id: "secret.databricks_token", label: "databricks_token", keywords: &["dapi"], regex: r"\b(dapi[a-f0-9]{32}(?:-\d)?)\b", group: 1, after: 44, check: Some(random_looking), ..BASE },
    // --- source control ---
    RuleDef { id: "secret.github_token", label: "github_token", keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], regex: r"\b(gh[pousr]_[A-Za-z0-9]{36})\b", group: 1, before: 4, after: 44, check: Some(github_checksum), ..BASE },
    RuleDef { id: "secret.github_fine_grained_token", label: "github_token", keywords: &["github_pat_"], regex: r"\b(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b", group: 1, after: 96, ..BASE },
    RuleDef { id: "secret.gitlab_token", label: "gitlab_token", keywords: &["glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "gr1348941"], regex: r"\b((?:glpat|gldt|glptt|glrt|glsoat|glft|glimt|glagent|gloas)-[A-Za-z0-9_\-]{20,}|glcbt-[0-9a-fA-F]{1,5}_[A-Za-z0-9_\-]{20}|GR1348941[A-Za-z0-9_\-]{20})(?:[^A-Za-z0-9_\-.]|$)", group: 1, after: 96, check: Some(not_placeholder), ..BASE },
    // --- chat and mail ---
    RuleDef { id: "secret.slack_token", label: "slack_token", keywords: &["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe", "xapp-"], regex: r"\b(xox[baprse]-[0-9A-Za-z\-]{10,250}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{100,200}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)\b", group: 1, after: 260, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.slack_webhook", label: "slack_webhook", keywords: &["hooks.slack.com"], regex: r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,120})", group: 1, before: 8, after: 140, ..BASE },
    RuleDef { id: "secret.sendgrid_key", label: "sendgrid_key", keywords: &["sg."], regex: r"\b(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})(?:[^A-Za-z0-9_\-]|$)", group: 1, after: 72, ..BASE },
    RuleDef { id: "secret.mailgun_key", label: "mailgun_key", keywords: &["key-"], regex: r"\b(key-[0-9a-f]{32})\b", group: 1, after: 40, check: Some(random_looking), ..BASE },
    RuleDef { id: "secret.twilio_key", label: "twilio_key", keywords: &["twilio"], regex: r"\b(SK[0-9a-fA-F]{32})\b", group: 1, before: 200, after: 200, check: Some(random_looking), ..BASE },
    RuleDef { id: "secret.telegram_bot_token", label: "telegram_bot_token", keywords: &[":aa"], regex: r"\b([0-9]{8,10}:AA[0-9A-Za-z_\-]{33})(?:[^0-9A-Za-z_\-]|$)", group: 1, before: 12, after: 40, ..BASE },
    RuleDef { id: "secret.discord_bot_token", label: "discord_bot_token", keywords: &["discord", "bot "], regex: r"\b([MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38})\b", group: 1, before: 80, after: 120, check: Some(random_looking), ..BASE },
    // --- payments and commerce ---
    RuleDef { id: "secret.stripe_key", label: "stripe_key", keywords: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"], regex: r"\b([rs]k_(?:live|test)_[0-9a-zA-Z]{24,247})\b", group: 1, after: 260, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.shopify_token", label: "shopify_token", keywords: &["shpat_", "shpss_", "shpca_", "shppa_"], regex: r"\b(shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})\b", group: 1, after: 40, ..BASE },
    // --- AI providers ---
    RuleDef { id: "secret.anthropic_key", label: "anthropic_key", severity: Severity::Critical, keywords: &["sk-ant-"], regex: r"\b(sk-ant-(?:api|admin|sid|oat)[0-9]{2}-[A-Za-z0-9_\-]{20,120})(?:[^A-Za-z0-9_\-]|$)", group: 1, after: 140, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.openai_key", label: "openai_key", severity: Severity::Critical, keywords: &["t3blbkfj", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-none-"], regex: r"\b(sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{16,200}T3BlbkFJ[A-Za-z0-9_\-]{16,200}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,250})(?:[^A-Za-z0-9_\-]|$)", group: 1, before: 220, after: 260, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.huggingface_token", label: "huggingface_token", keywords: &["hf_", "api_org_"], regex: r"\b((?:hf_|api_org_)[A-Za-z0-9]{34})\b", group: 1, after: 44, check: Some(random_looking), ..BASE },
    // --- package registries ---
    RuleDef { id: "secret.npm_token", label: "npm_token", keywords: &["npm_"], regex: r"\b(npm_[A-Za-z0-9]{36})\b", group: 1, after: 44, check: Some(random_looking), ..BASE },
    RuleDef { id: "secret.pypi_token", label: "pypi_token", keywords: &["pypi-ageichlwas5vcmc"], regex: r"\b(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,})", group: 1, after: 260, ..BASE },
    // --- keys and tokens ---
    RuleDef { id: "secret.private_key", label: "private_key", severity: Severity::Critical, keywords: &["-----begin"], regex: r"(-----BEGIN[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\sA-Za-z0-9+/=:,.]{64,}))", group: 1, after: 16500, ..BASE },
    RuleDef { id: "secret.jwt", label: "jwt", keywords: &["eyj"], regex: r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,})", group: 1, after: 8192, check: Some(jwt), ..BASE },
    RuleDef { id: "secret.bearer_token", label: "bearer_token", keywords: &["bearer"], regex: r"(?i)(?:authorization|auth|bearer)[\x22']?\s*[:=]?\s*[\x22']?bearer\s+([A-Za-z0-9_\-.=:/+~]{12,})", group: 1, before: 32, after: 400, check: Some(not_placeholder), ..BASE },
    RuleDef { id: "secret.connection_string", label: "password", keywords: &["://"], regex: r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:@/\x22'<>]{1,64}:([^\s@/\x22'<>]{3,128})@[A-Za-z0-9.\-_\[\]:]+", group: 1, before: 90, after: 220, check: Some(password_value), ..BASE },
    // --- keyword context ---
    RuleDef {
        id: "secret.keyword_assignment",
        label: "secret",
        severity: Severity::Medium,
        keywords: &["password", "passwd", "pwd", "secret", "token", "api_key", "apikey", "api-key", "access_key", "accesskey", "auth_key", "private_key", "client_secret", "credential"],
        regex: r#"(?i)[A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|auth[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?)[A-Za-z0-9_.\-]*[\x22']?\s*(?:=|:=|=>|:)\s*[\x22'`]?([^\s\x22'`,;]{8,200})"#,
        group: 1,
        before: 48,
        after: 240,
        check: Some(random_looking),
       
        ..BASE
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Category;

    #[test]
    fn every_rule_is_a_secret() {
        assert!(RULES.iter().all(|r| r.category == Category::Secret));
    }
}
