//! The client's roots (its answer to a server's `roots/list`): the folders the user offers
//! the server to work in. Offering a folder invites reading it, so a root that holds a
//! credential or secret store — `~/.ssh`, `~/.aws`, a whole home directory, `/etc`, `/` —
//! is withheld from the server, and the rest pass. What holds one is the path knowledge
//! the command analyser judges reads by ([`bulwark_shell::paths::holds_sensitive`]), so a
//! root and a `cat` of a file under it are judged alike.
//!
//! Read as the client's machine would: a `file://` URI, percent-decoded, `.` and `..`
//! resolved, compared without regard to case, and — where the path exists on the
//! gateway's machine (a stdio gateway runs beside its client) — through its symbolic links
//! too. A root that is not a local `file://` URI (the protocol allows no other) cannot be
//! judged, and is withheld as well.

use serde_json::Value;

/// Takes the roots that must not reach the server out of a `roots/list` result; returns
/// their URIs (as the client wrote them, or a description when there was none).
pub fn withhold(result: &mut Value) -> Vec<String> {
    let Some(roots) = result.get_mut("roots").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut withheld = Vec::new();
    roots.retain(|root| {
        let uri = root.get("uri").and_then(Value::as_str);
        match uri {
            Some(u) if !exposes_secrets(u) => true,
            Some(u) => {
                withheld.push(u.to_string());
                false
            }
            None => {
                withheld.push("(a root without a uri)".into());
                false
            }
        }
    });
    withheld
}

/// Whether offering the root at `uri` offers a credential store (or cannot be judged).
pub fn exposes_secrets(uri: &str) -> bool {
    let Some(path) = local_path(uri) else {
        return true;
    };
    if bulwark_shell::paths::holds_sensitive(&path) {
        return true;
    }
    // A link to a credential store is one (`~/work/keys -> ~/.ssh`).
    std::fs::canonicalize(&path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .is_some_and(|p| p != path && bulwark_shell::paths::holds_sensitive(&p))
}

/// The absolute path a `file://` URI names on this machine, percent-decoded; `None` for
/// anything else (another scheme, another host, a relative or undecodable path).
fn local_path(uri: &str) -> Option<String> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    match url.host_str() {
        None | Some("") | Some("localhost") => {}
        Some(_) => return None,
    }
    let path = percent_encoding::percent_decode_str(url.path())
        .decode_utf8()
        .ok()?
        .into_owned();
    // A Windows drive (`file:///C:/Users/bob/.ssh`) names its folders from the drive's
    // root; backslashes are separators there.
    let path = path.replace('\\', "/");
    let path = match path.as_bytes() {
        [b'/', d, b':', ..] if d.is_ascii_alphabetic() => path[3..].to_string(),
        _ => path,
    };
    let path = if path.is_empty() { "/".into() } else { path };
    path.starts_with('/').then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_holding_credential_stores_are_withheld_and_the_rest_pass() {
        let mut result = json!({"roots": [
            {"uri": "file:///work/app", "name": "app"},
            {"uri": "file:///root/.ssh", "name": "keys"},
            {"uri": "file:///home/bob", "name": "home"},
            {"uri": "file:///etc"},
            {"uri": "file:///"},
            {"uri": "file:///home/bob/%2Eaws"},
            {"uri": "file:///home/bob/src/../.gnupg"},
            {"uri": "file:///C:/Users/bob/.ssh"},
            {"uri": "file://otherhost/work/app"},
            {"uri": "https://example.com/repo"},
            {"name": "no uri"},
            {"uri": "file:///home/bob/projects/site", "name": "site"},
        ]});
        let withheld = withhold(&mut result);
        let kept: Vec<&str> = result["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            kept,
            ["file:///work/app", "file:///home/bob/projects/site"],
            "{withheld:?}"
        );
        assert_eq!(withheld.len(), 10, "{withheld:?}");
        assert!(withheld.contains(&"file:///home/bob/%2Eaws".to_string()));
    }

    #[test]
    fn a_link_to_a_credential_store_is_one() {
        let dir = std::env::temp_dir().join(format!("bulwark-roots-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("home")).unwrap();
        let link = dir.join("keys");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/etc", &link).unwrap();
        let uri = format!("file://{}", link.display());
        assert!(exposes_secrets(&uri), "{uri}");
        let plain = format!("file://{}", dir.join("home").display());
        assert!(!exposes_secrets(&plain), "{plain}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
