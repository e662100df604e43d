"""Side-by-side precision/recall of detect-secrets and `bulwark scan` on the secret corpora.

Each case is written to its own file (with the case's file extension, which detect-secrets'
keyword plugin depends on) and scanned by both tools. A case counts as flagged when the tool
reports any secret in it.
"""
import json
import os
import subprocess
import sys
import tempfile

from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings

bulwark, data = sys.argv[1], sys.argv[2]

GITLEAKS_IN_SCOPE = {
    "aws-access-token", "anthropic-admin-api-key", "anthropic-api-key", "azure-ad-client-secret", "gcp-api-key", "gcp-service-account",
    "github-app-token", "github-fine-grained-pat", "github-oauth", "github-pat", "github-refresh-token", "gitlab-pat", "gitlab-pat-routable",
    "gitlab-ptt", "gitlab-rrt", "gitlab-runner-authentication-token-routable", "slack-app-token", "slack-bot-token", "slack-config-access-token",
    "slack-config-refresh-token", "slack-legacy-bot-token", "slack-legacy-token", "slack-legacy-workspace-token", "slack-user-token",
    "slack-webhook-url", "private-key", "jwt-base64", "huggingface-access-token", "huggingface-organization-api-token", "generic-api-key",
    "curl-auth-header", "databricks-api-token", "sidekiq-sensitive-url",
}
DS_IN_SCOPE = {"azure_storage_key", "basic_auth", "github_token", "gitlab_token", "jwt", "keyword", "npm", "openai", "private_key", "pypi_token", "sendgrid", "slack", "stripe_key"}


def cases():
    rows = [json.loads(l) for l in open(os.path.join(data, "gitleaks_rule_samples.jsonl"))]
    pos = {r["text"] for r in rows if r["label"] == "tp"}
    for r in rows:
        truth = r["label"] == "tp"
        if not truth and r["text"] in pos:
            continue
        yield ("gitleaks, covered types" if r["rule_id"] in GITLEAKS_IN_SCOPE else None, "gitleaks, all rules", r["text"], "txt", truth)
    rows = [json.loads(l) for l in open(os.path.join(data, "detect_secrets_plugin_cases.jsonl"))]
    pos = {r["text"] for r in rows if r["should_flag"]}
    for r in rows:
        truth = bool(r["should_flag"])
        if not truth and r["text"] in pos:
            continue
        yield ("detect-secrets cases, covered plugins" if r["plugin"] in DS_IN_SCOPE else None, "detect-secrets cases, all plugins", r["text"], r.get("file_extension") or "txt", truth)


def ds_flags(path):
    with default_settings():
        sc = SecretsCollection()
        sc.scan_file(path)
        return any(True for _ in sc)


def bulwark_flags(path):
    out = subprocess.run([bulwark, "scan", "--json", "--as", "request", path], capture_output=True, text=True)
    return any(f["category"] == "secret" for f in json.loads(out.stdout or "[]"))


tallies = {}
with tempfile.TemporaryDirectory() as tmp:
    for i, (scoped, everything, text, ext, truth) in enumerate(cases()):
        path = os.path.join(tmp, f"case{i}.{ext}")
        with open(path, "w") as f:
            f.write(text + "\n")
        verdicts = {"detect-secrets 1.5.0": ds_flags(path), "bulwark": bulwark_flags(path)}
        for tool, flagged in verdicts.items():
            for set_name in (scoped, everything):
                if set_name is None:
                    continue
                t = tallies.setdefault((set_name, tool), [0, 0, 0, 0])
                t[(0 if truth else 2) + (0 if flagged else 1)] += 1

print("| set | tool | TP | FN | FP | TN | precision | recall |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for (set_name, tool), (tp, fn, fp, tn) in sorted(tallies.items()):
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    print(f"| {set_name} | {tool} | {tp} | {fn} | {fp} | {tn} | {100*p:.1f}% | {100*r:.1f}% |")
