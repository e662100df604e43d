/*
 * bulwark.h: Bulwark's engine in-process (libbulwark.so / libbulwark.a).
 *
 * Every function is thread-safe: one engine may be shared by many threads. Strings the
 * library returns are freed with bulwark_string_free and nothing else. A call is a
 * `bulwark check` line (docs/check.md); the answer is the decision JSON `bulwark check`
 * prints (docs/decisions.md). Bad input (NULL, bytes that are not UTF-8, JSON that is not a
 * call) is answered with an INVALID_INPUT block, never a crash.
 *
 * tests/header.rs checks these prototypes against the Rust definitions in src/abi.rs.
 */
#ifndef BULWARK_H
#define BULWARK_H

#ifdef __cplusplus
extern "C" {
#endif

/* An engine: a policy, its compiled rules and the sessions it has seen. Opaque. */
typedef struct bulwark_engine bulwark_engine;

/*
 * Creates an engine. policy_yaml is a policy file's text, or NULL for the built-in default
 * (docs/policy.md). On failure returns NULL and,
 * when error_out is not NULL, stores a message there (free it with bulwark_string_free); on
 * success stores NULL there.
 */
bulwark_engine *bulwark_engine_new(const char *policy_yaml, char **error_out);

/*
 * Decides one call: a `bulwark check` line in, decision JSON out, e.g.
 * {"decision":"block","reason_code":"RULE","rule_id":"fs.rm_root_or_home",...}.
 * Never returns NULL. Free the result with bulwark_string_free.
 */
char *bulwark_evaluate(bulwark_engine *engine, const char *call_json);

/* Frees a string this library returned. NULL is ignored. */
void bulwark_string_free(char *s);

/* Frees an engine. NULL is ignored. No call may be using it. */
void bulwark_engine_free(bulwark_engine *engine);

#ifdef __cplusplus
}
#endif

#endif /* BULWARK_H */
