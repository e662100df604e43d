//! Provider token formats beyond the core set in `secrets`: the prefixes, lengths,
//! alphabets and entropy floors of gitleaks' default rule set (MIT, gitleaks/gitleaks
//! `config/gitleaks.toml`; the formats are facts about each provider's tokens, the licence
//! is in `tests/data/licenses/gitleaks-MIT.txt`), written as our own table.
//!
//! Two kinds of rule. A token with a prefix of its own (`pplx-`, `ntn_`, `sntryu_`) is
//! found wherever it appears. A token without one is found only as the value of a name that
//! says which provider it belongs to (`SNYK_TOKEN = …`, `sourcegraph: …`): one rule over
//! every provider name rather than one rule per provider, so a provider's key in a shape
//! that gitleaks did not list (a longer secret, a UUID) is found too, and the value must
//! look random, not a word, an identifier or a URL.

use crate::entropy::{is_placeholder, shannon};
use crate::rules::{ANY_GROUP, BASE, RuleDef};

fn entropy_at_least(v: &[u8], floor: f64) -> bool {
    !is_placeholder(v) && shannon(v) >= floor
}

fn ent2(v: &[u8]) -> bool {
    entropy_at_least(v, 2.0)
}
fn ent3(v: &[u8]) -> bool {
    entropy_at_least(v, 3.0)
}
fn ent35(v: &[u8]) -> bool {
    entropy_at_least(v, 3.5)
}
fn ent4(v: &[u8]) -> bool {
    entropy_at_least(v, 4.0)
}
fn ent45(v: &[u8]) -> bool {
    entropy_at_least(v, 4.5)
}

/// The value of a provider-named assignment: long enough, letters and digits, not a URL,
/// path, word or placeholder. Identifiers are ruled out by the name (`provider_name`).
fn provider_value(v: &[u8]) -> bool {
    let v = v.strip_suffix(b".").unwrap_or(v);
    let digits = v.iter().filter(|b| b.is_ascii_digit()).count();
    let alpha = v.iter().filter(|b| b.is_ascii_alphabetic()).count();
    v.len() >= 14
        && digits > 0
        && alpha > 0
        // A version, date or number with a few letters is not a key.
        && alpha * 5 >= v.len()
        && !is_placeholder(v)
        && !crate::secrets::published_example(v)
        && !crate::secrets::code_expression(v)
        && shannon(v) >= if v.len() >= 24 { 3.0 } else { 2.8 }
}

/// The name of a provider-named assignment, less names that hold public identifiers,
/// addresses and settings (`discord_client_id`, `SENTRY_URL`, `twitter_username`).
fn provider_name(whole: &[u8]) -> bool {
    let cut = whole
        .iter()
        .position(|&b| matches!(b, b'=' | b':' | b',' | b'>' | b'|' | b'?'))
        .unwrap_or(whole.len());
    let name = String::from_utf8_lossy(&whole[..cut]);
    let name = name.trim_end_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'');
    const PUBLIC: &[&str] = &[
        "id",
        "ids",
        "url",
        "uri",
        "urls",
        "host",
        "hostname",
        "domain",
        "endpoint",
        "name",
        "username",
        "user",
        "login_url",
        "email",
        "region",
        "version",
        "project",
        "channel",
        "org",
        "team",
        "site",
        "path",
        "file",
        "dir",
        "port",
        "env",
        "environment",
        "level",
        "dsn_public",
        "public",
        "publishable",
    ];
    let last = crate::secrets::last_word(name);
    crate::secrets::not_an_identifier_name(whole)
        && !PUBLIC.contains(&last.as_str())
        && provider_starts_a_word(name)
}

/// Whether a provider's name starts a word of `name` (`OKTA_KEY`, `oktaKey`, `my.okta`),
/// rather than sitting inside another word (`rookTable`).
fn provider_starts_a_word(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let bytes = name.as_bytes();
    PROVIDERS.iter().any(|p| {
        lower.match_indices(p).any(|(i, _)| {
            i == 0
                || !bytes[i - 1].is_ascii_alphabetic()
                || (bytes[i].is_ascii_uppercase() && bytes[i - 1].is_ascii_lowercase())
        })
    })
}

/// Provider names that make an assignment's value that provider's credential (the
/// keywords of gitleaks' provider rules; bare common words such as "linear" or "lob" left
/// out, as they name many things).
const PROVIDERS: &[&str] = &[
    "adafruit",
    "adobe",
    "airtable",
    "algolia",
    "alibaba",
    "asana",
    "atlassian",
    "confluence",
    "jira",
    "beamer",
    "bitbucket",
    "bittrex",
    "meraki",
    "cloudflare",
    "codecov",
    "cohere",
    "co_api_key",
    "coinbase",
    "confluent",
    "contentful",
    "datadog",
    "dnkey",
    "discord",
    "droneci",
    "dropbox",
    "etsy",
    "facebook",
    "fastly",
    "finicity",
    "finnhub",
    "flickr",
    "freshbooks",
    "gitter",
    "gocardless",
    "heroku",
    "hubspot",
    "intercom",
    "jfrog",
    "artifactory",
    "bintray",
    "kraken",
    "kucoin",
    "launchdarkly",
    "linkedin",
    "linked_in",
    "mailchimp",
    "mailgun",
    "mapbox",
    "mattermost",
    "messagebird",
    "message_bird",
    "message-bird",
    "netlify",
    "newrelic",
    "new_relic",
    "new-relic",
    "nytimes",
    "okta",
    "plaid",
    "privateai",
    "private_ai",
    "rapidapi",
    "sendbird",
    "sentry",
    "snyk",
    "sonar",
    "sourcegraph",
    "squarespace",
    "sumologic",
    "telegram",
    "travis",
    "twilio",
    "twitch",
    "twitter",
    "yandex",
    "zendesk",
    // Beyond gitleaks' list: providers whose keys have no prefix of their own.
    "ibm",
    "bluemix",
    "cloudant",
    "softlayer",
    "doppler",
    "grafana",
    "pulumi",
    "terraform",
    "postmark",
    "pagerduty",
    "circleci",
    "buildkite",
    "vercel",
    "supabase",
    "pusher",
    "braintree",
    "paypal",
    "razorpay",
];

/// The regex of the provider-named assignment rule: the name holds a provider, then an
/// assignment operator of any common syntax, then the value (gitleaks' assignment shape).
const PROVIDER_ASSIGNMENT: &str = concat!(
    r#"(?i)[A-Za-z0-9_.\-]{0,50}?(?:adafruit|adobe|airtable|algolia|alibaba|asana|atlassian|confluence|jira|beamer|bitbucket|bittrex|meraki|cloudflare|codecov|cohere|co_api_key|coinbase|confluent|contentful|datadog|dnkey|discord|droneci|dropbox|etsy|facebook|fastly|finicity|finnhub|flickr|freshbooks|gitter|gocardless|heroku|hubspot|intercom|jfrog|artifactory|bintray|kraken|kucoin|launchdarkly|linked[_\-]?in|mailchimp|mailgun|mapbox|mattermost|message[_\-]?bird|netlify|new[_\-]?relic|nytimes|okta|plaid|private[_\-]?ai|rapidapi|sendbird|sentry|snyk|sonar|sourcegraph|squarespace|sumologic|telegram|travis|twilio|twitch|twitter|yandex|zendesk|ibm|bluemix|cloudant|softlayer|doppler|grafana|pulumi|terraform|postmark|pagerduty|circleci|buildkite|vercel|supabase|pusher|braintree|paypal|razorpay)"#,
    r#"[ \t\w.\-]{0,20}[\s'"\]]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}"#,
    r#"([A-Za-z0-9_=+/.\-]{14,200}|\d{5,16}[:|][A-Za-z0-9_\-]{20,60})(?:[\x60'"\s;,)<]|\\[nr]|$)"#,
);

/// A `curl` command's `-u user:password` (across continued lines).
const CURL_USER: &str = r#"\bcurl\b(?:[^\n]*\\\r?\n){0,6}?[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]{0,5})(?:"([^"\n]{3,200})"|'([^'\n]{3,200})'|([^\s"']{3,200}))(?:\s|$)"#;

/// `user:password` given to `curl -u`, unless the password is a variable, a template or a
/// stand-in (`$PASS`, `<password>`, `changeme`, `test`).
fn curl_credentials(v: &[u8]) -> bool {
    let Some(colon) = v.iter().position(|b| *b == b':') else {
        return false;
    };
    let (user, pass) = (&v[..colon], &v[colon + 1..]);
    let lower = pass.to_ascii_lowercase();
    let stand_in = matches!(
        lower.as_slice(),
        b"changeit" | b"changeme" | b"pass" | b"password" | b"pwd" | b"test" | b"token" | b"secret"
    ) || lower.iter().all(|b| matches!(b, b'x' | b'*'));
    let variable = |s: &[u8]| {
        s.first()
            .is_some_and(|b| matches!(b, b'$' | b'<' | b'{' | b'[' | b'%'))
    };
    pass.len() >= 3
        && !stand_in
        && !variable(pass)
        && !variable(user)
        && !is_placeholder(pass)
        && shannon(pass) >= 2.0
}

/// The provider rules.
pub const RULES: &[RuleDef] = &[
    RuleDef {
        id: "secret.provider_assignment",
        label: "provider_token",
        keywords: PROVIDERS,
        regex: PROVIDER_ASSIGNMENT,
        group: ANY_GROUP,
        before: 64,
        after: 320,
        check: Some(provider_value),
        context: Some(provider_name),
        ..BASE
    },
    RuleDef {
        id: "secret.curl_user",
        label: "password",
        keywords: &["curl"],
        regex: CURL_USER,
        group: ANY_GROUP,
        before: 8,
        after: 1600,
        check: Some(curl_credentials),
        ..BASE
    },
    RuleDef {
        id: "secret.facebook_token",
        label: "facebook_token",
        keywords: &["facebook", "eaam", "eaac"],
        regex: r"\b(\d{15,16}(?:\||%7[Cc])[0-9A-Za-z_\-]{27,40}|EAA[MC][A-Za-z0-9]{100,})(?:[^0-9A-Za-z_\-]|$)",
        group: 1,
        before: 200,
        after: 400,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.twilio_api_key",
        label: "twilio_key",
        keywords: &["sk"],
        regex: r"\b(SK[0-9a-fA-F]{32})\b",
        group: 1,
        before: 2,
        after: 36,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.twilio_account",
        label: "twilio_key",
        keywords: &["twilio"],
        regex: r"\b(AC[0-9a-f]{32})\b",
        group: 1,
        before: 200,
        after: 200,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.aws_bedrock_key",
        label: "aws_bedrock_key",
        keywords: &["absk", "bedrock-api-key-"],
        // Long-lived keys are "ABSK" + base64("BedrockAPIKey-…"); short-lived ones are
        // "bedrock-api-key-" + base64 of a presigned bedrock.amazonaws.com URL.
        regex: r"\b(ABSKQmVkcm9ja0FQSUtleS[A-Za-z0-9+/]{60,200}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%]*)(?:[^A-Za-z0-9+/=%]|$)",
        group: 1,
        after: 1200,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.onepassword_token",
        label: "onepassword_token",
        keywords: &["ops_eyj", "a3-"],
        regex: r"\b(ops_eyJ[A-Za-z0-9+/]{250,}={0,3}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})(?:[^A-Za-z0-9+/=]|$)",
        group: 1,
        after: 4000,
        check: Some(ent4),
        ..BASE
    },
    RuleDef {
        id: "secret.age_key",
        label: "age_key",
        severity: crate::finding::Severity::Critical,
        keywords: &["age-secret-key-1"],
        regex: r"(AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})",
        group: 1,
        after: 80,
        ..BASE
    },
    RuleDef {
        id: "secret.atlassian_token",
        label: "atlassian_token",
        keywords: &["atatt3"],
        regex: r"\b(ATATT3[A-Za-z0-9_\-=]{186})(?:[^A-Za-z0-9_\-=]|$)",
        group: 1,
        after: 200,
        check: Some(ent35),
        ..BASE
    },
    RuleDef {
        id: "secret.artifactory_token",
        label: "artifactory_token",
        keywords: &["akcp", "cmvmd"],
        regex: r"\b(AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})\b",
        group: 1,
        after: 80,
        check: Some(ent45),
        ..BASE
    },
    RuleDef {
        id: "secret.cloud_provider_token",
        label: "cloud_token",
        keywords: &[
            "4b1d", "v1.0-", "ltai", "dt0c01.", "hrku-aa", "atlasv1", "sha256~", "pscale_",
            "tk-us-", "fo1_", "fm1", "fm2_", "dp.pt.", "_mmk", "ico-", "pul-",
        ],
        regex: r#"\b(4b1d[A-Za-z0-9]{38}|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}|LTAI[A-Za-z0-9]{20}|dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}|HRKU-AA[0-9A-Za-z_\-]{58}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}|sha256~[A-Za-z0-9_\-]{43}|pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.\-]{32,64}|tk-us-[A-Za-z0-9_\-]{48}|fo1_[A-Za-z0-9_\-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3}|dp\.pt\.[A-Za-z0-9]{43}|[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk|ico-[A-Za-z0-9]{32}|pul-[a-f0-9]{40})(?:[\x60'"\s;,)<>\]]|\.(?:\s|$)|\\[nr]|$)"#,
        group: 1,
        before: 60,
        after: 400,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.saas_token",
        label: "saas_token",
        keywords: &[
            "pplx-",
            "ntn_",
            "sntryu_",
            "sntrys_",
            "sm_aat_",
            "sm_pat_",
            "sm_sat_",
            "shippo_",
            "pmak-",
            "pnu_",
            "rdme_",
            "rubygems_",
            "xkeysib-",
            "tfp_",
            "lin_api_",
            "fio-u-",
            "duffel_",
            "ezak",
            "eztk",
            "p8e-",
            "clojars_",
            "glsa_",
            "glc_",
            "eyjrijoi",
            "nrak-",
            "nrii-",
            "nrjs-",
            "sgp_",
            "s-s4t2",
            "sq0atp-",
            "glffct-",
            "_gitlab_session=",
        ],
        regex: r#"\b(pplx-[A-Za-z0-9]{48}|ntn_[0-9]{11}[A-Za-z0-9]{35}|sntryu_[a-f0-9]{64}|sntrys_eyJpYXQiO[A-Za-z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[A-Za-z0-9+/]{10,200}={0,2}_[A-Za-z0-9+/]{43}|sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}|shippo_(?:live|test)_[a-fA-F0-9]{40}|PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}|pnu_[A-Za-z0-9]{36}|rdme_[a-z0-9]{70}|rubygems_[a-f0-9]{48}|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|tfp_[A-Za-z0-9_.=\-]{59}|lin_api_[A-Za-z0-9]{40}|fio-u-[A-Za-z0-9_=\-]{64}|duffel_(?:test|live)_[A-Za-z0-9_=\-]{43}|EZ[AT]K[A-Za-z0-9]{54}|p8e-[A-Za-z0-9]{32}|CLOJARS_[A-Za-z0-9]{60}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3}|NRAK-[A-Za-z0-9]{27}|NRII-[A-Za-z0-9\-]{32}|NRJS-[a-f0-9]{19}|sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40}|s-s4t2(?:ud|af)-[a-fA-F0-9]{64}|sq0atp-[A-Za-z0-9_\-]{22,60}|glffct-[A-Za-z0-9_\-]{20}|_gitlab_session=[0-9a-z]{32})(?:[\x60'"\s;,)<>\]]|\.(?:\s|$)|\\[nr]|$)"#,
        group: 1,
        before: 8,
        after: 480,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        // Documented token formats with a prefix, length and alphabet of their own, outside
        // gitleaks' default set or beyond its variants: Mailchimp (`…-us12`), Square
        // (`EAAA…`, `sq0csp-`), Mapbox secret tokens (`sk.eyJ…`), Harness, Doppler's other
        // token kinds, Flutterwave, NuGet (`oy2…`), Private Packagist, Azure DevOps PATs
        // (the `AZDO` signature), Stripe webhook secrets, Supabase, Groq, xAI, Replicate,
        // Google OAuth access and refresh tokens, Buildkite, the SoftLayer API URL.
        id: "secret.vendor_token",
        label: "saas_token",
        keywords: &[
            "-us",
            "eaaa",
            "sq0csp-",
            "sk.eyj",
            "pat.",
            "sat.",
            "dp.st.",
            "dp.sa.",
            "dp.ct.",
            "dp.scim.",
            "dp.audit.",
            "flwseck",
            "oy2",
            "packagist_",
            "azdo",
            "whsec_",
            "sbp_",
            "sb_secret_",
            "gsk_",
            "xai-",
            "r8_",
            "ya29.",
            "1//0",
            "bkua_",
        ],
        regex: r#"(?:^|[^A-Za-z0-9_\-+/.])([0-9a-f]{32}-us[0-9]{1,2}|EAAA[A-Za-z0-9_\-]{60}|sq0csp-[A-Za-z0-9_\-]{43}|sk\.eyJ[A-Za-z0-9_\-]{50,400}\.[A-Za-z0-9_\-]{20,100}|(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[0-9a-f]{24}\.[A-Za-z0-9]{20}|dp\.(?:st|sa|ct|scim|audit)\.[A-Za-z0-9_.\-]{40,60}|FLWSECK(?:_TEST)?-[a-hA-H0-9]{32}-X|FLWSECK_TEST[a-hA-H0-9]{12}|oy2[a-z0-9]{43}|packagist_[ou][ol]t_[a-f0-9]{68}|[A-Za-z0-9]{52}JQQJ99[A-Za-z0-9]{3}AZDO[A-Za-z0-9]{4}|whsec_[A-Za-z0-9+/]{32,88}={0,2}|sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{31,64}|gsk_[A-Za-z0-9]{52}|xai-[A-Za-z0-9]{80}|r8_[A-Za-z0-9]{37}|ya29\.[0-9A-Za-z_\-]{30,2000}|1//0[0-9A-Za-z_\-]{40,400}|bkua_[a-f0-9]{40})(?:[^A-Za-z0-9_\-+/=]|$)"#,
        group: 1,
        before: 60,
        after: 2100,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        // SoftLayer's API takes the key in the URL path.
        id: "secret.vendor_token",
        label: "saas_token",
        keywords: &["api.softlayer.com"],
        regex: r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})\b",
        group: 1,
        after: 120,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.octopus_deploy_key",
        label: "octopus_key",
        keywords: &["api-"],
        regex: r#"\b(API-[A-Z0-9]{26})(?:[\x60'"\s;]|\\[nr]|$)"#,
        group: 1,
        after: 40,
        check: Some(ent3),
        ..BASE
    },
    RuleDef {
        id: "secret.teams_webhook",
        label: "teams_webhook",
        keywords: &["webhook.office.com"],
        regex: r"(https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}@[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12})",
        group: 1,
        before: 40,
        after: 260,
        check: Some(ent2),
        ..BASE
    },
];

#[cfg(test)]
mod tests {
    use crate::finding::Category;

    fn found(text: &str) -> Vec<&'static str> {
        let s = crate::Scanner::new().unwrap_or_else(|e| panic!("{e}"));
        s.scan(text, crate::Scope::Request)
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.category == Category::Secret)
            .map(|f| f.rule_id)
            .collect()
    }

    #[test]
    fn provider_named_values_are_found_in_any_shape() {
        for text in [
            "SNYK = 'b7e4c2d9-41fa-4c6e-9d0b-83a5f1e2c7d4'",
            "sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3",
            "export DATADOG_APP=9c4f1e7a2b8d3f60e5a1c9b7d4f2e8a3c6b0d1f5",
            "heroku_api: 3f9a1c7e-2b4d-4e8f-a6c1-9d7b5e3f2a10",
        ] {
            assert!(
                found(text).contains(&"secret.provider_assignment"),
                "{text}: {:?}",
                found(text)
            );
        }
    }

    #[test]
    fn provider_identifiers_and_words_are_not_secrets() {
        for text in [
            "discord_client_id = 123456789012345678",
            "SENTRY_URL=https://o123.ingest.sentry.io/4504",
            "twitter_username: example_handle_2024",
            "getPagesInConfluenceSpace,searchConfluenceUsingCql",
            "jira_version = 9.12.1",
            "rookTable = 0023452Lllk2KqjLBvaxANWEgTd7bqjsxjo8aZj0wd",
            "http://assets.example/video_box.ico-7a388b69018576d24b59331fd60aab0c.png",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn curl_user_needs_a_real_password() {
        assert!(
            found("curl -u deploy:q8Rz2LmX7vTp https://ci.internal/api")
                .contains(&"secret.curl_user")
        );
        for quiet in [
            "curl -u <user:password> https://test.com/endpoint",
            "curl --user \"$1:$2\" \"$3\"",
            "curl -i -u 'test:test'",
            "curl -u admin:changeme http://localhost",
        ] {
            assert!(
                !found(quiet).contains(&"secret.curl_user"),
                "{quiet}: {:?}",
                found(quiet)
            );
        }
    }

    #[test]
    fn prefixed_tokens_are_found() {
        for text in [
            "PPLX=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",
            "key: SK8f3a9c1e7b2d4f6a0c9e1b3d5f7a2c4e",
            "AmazonBedrockAPIKeyShortLivedToken=bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29tLz9BY3Rpb249Q2FsbFdpdGhCZWFyZXJUb2tlbg",
            "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L2ZXCVB",
        ] {
            assert!(!found(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn vendor_formats_outside_gitleaks_are_found() {
        for text in [
            "MAILCHIMP=9f3a1c7e2b4d4e8fa6c19d7b5e3f2a10-us14",
            "square.token = EAAAEk3Zq9LmX7vTp2RbN8cY1wE6uI0oA5sD3fG7hJ2kL9zX4cV8bN1mQ6wE0rT5",
            "SQUARE_SECRET: sq0csp-Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7hJ2kL9z",
            "mapbox: sk.eyJ1IjoiZXhhbXBsZXVzZXIiLCJhIjoiY2x6cTNrbDl4djJwdDdtbjRicjhjeTF3In0.Zq3kL9xV2pT7mN4bR8cY1w",
            "DOPPLER_TOKEN=dp.st.prd.Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7hJ2kL9zX",
            "nuget push pkg.nupkg -k oy2k3zq9lmx7vtp2rbn8cy1we6ui0oa5sd3fg7hj2kl9zx",
            "whsec_Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD",
            "GROQ_API_KEY=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",
            "Authorization: Bearer ya29.a0AfH6SMBZq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7",
            "https://api.softlayer.com/soap/v3/9f3a1c7e2b4d4e8fa6c19d7b5e3f2a109f3a1c7e2b4d4e8fa6c19d7b5e3f2a10",
            "ibm_cloud_iam = 'Zq3kL9xV2pT7mN4bR8cY1wE6uI0oA5sD3fG7hJ2kL9zX'",
        ] {
            assert!(
                found(text).contains(&"secret.vendor_token")
                    || found(text).contains(&"secret.provider_assignment"),
                "{text}: {:?}",
                found(text)
            );
        }
        for quiet in [
            // A digest that happens to start with `eaaa` is not a Square token.
            "aws-cli@sha256:eaaa7b11777babe28e6133a8b19ff71cea687e0d7f05158dee95a71f76ce3d00",
            "sk.eyJxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxx",
            // Mapbox's public tokens are meant for browsers.
            "mapboxgl.accessToken = 'pk.eyJ1IjoiZXhhbXBsZSIsImEiOiJjbHpxM2tsOXh2MnB0N21uNGJyOGN5MXcifQ.Zq3kL9xV2pT7mN4bR8cY1w';",
        ] {
            assert!(found(quiet).is_empty(), "{quiet}: {:?}", found(quiet));
        }
    }
}
