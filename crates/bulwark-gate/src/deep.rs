//! The deep path's guard, attached to each engine the gate makes (docs/guard.md).
//!
//! The policy names the model (`guard.model`: an installed model under
//! STATE_DIR/guard/NAME, or a folder) or an Ollama endpoint (`guard.endpoint`). Loading the
//! in-process model reads and checks 91 MB, so it is done once per process and model and
//! shared by every engine a reload or the fleet puts in force; its runner (worker threads,
//! bounded queue, deadline) is shared the same way. A model that cannot be loaded is not
//! remembered — installing it and reloading the policy is enough — and until then every
//! scoring fails with the reason, which `guard.on_error` turns into a block or a warning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bulwark_engine::{DeepGuard, Engine};
use bulwark_guard::{Runner, Scorer};
use bulwark_policy::GuardPolicy;

/// Jobs that may wait for a worker before a call is refused as busy.
const QUEUE: usize = 32;

struct Scoring {
    runner: Arc<Runner>,
    timeout: Duration,
}

impl std::fmt::Debug for Scoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scoring")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl DeepGuard for Scoring {
    fn score(&self, text: &str) -> Result<f32, String> {
        self.runner
            .score(text, self.timeout)
            .map_err(|e| e.to_string())
    }
}

fn runners() -> &'static Mutex<HashMap<String, Arc<Runner>>> {
    static RUNNERS: OnceLock<Mutex<HashMap<String, Arc<Runner>>>> = OnceLock::new();
    RUNNERS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// `engine` with the guard its policy asks for (unchanged when the guard is off).
pub(crate) fn attach(engine: Engine, state_dir: Option<&Path>) -> Engine {
    let g = engine.policy().guard.clone();
    if !g.enabled {
        return engine;
    }
    let guard: Arc<dyn DeepGuard> = match runner(&g, state_dir) {
        Ok(runner) => Arc::new(Scoring {
            runner,
            timeout: Duration::from_millis(g.timeout_ms),
        }),
        Err(why) => Arc::new(bulwark_engine::deep::Unavailable(why)),
    };
    engine.with_guard(Some(guard))
}

/// Where an in-process model named `model` is installed (a `:encoder` suffix, which asks
/// for the full encoder instead of the distilled table, names the same folder).
pub fn model_dir(model: &str, state_dir: Option<&Path>) -> Option<PathBuf> {
    let (model, _) = bulwark_guard::Kind::from_model_name(model);
    if model.contains('/') {
        return Some(PathBuf::from(model));
    }
    state_dir.map(|s| s.join("guard").join(model))
}

/// Makes the scorer a runner is started with, or says why it cannot.
type MakeScorer = Box<dyn FnOnce() -> Result<Arc<dyn Scorer>, String>>;

fn runner(g: &GuardPolicy, state_dir: Option<&Path>) -> Result<Arc<Runner>, String> {
    let timeout = Duration::from_millis(g.timeout_ms);
    let (key, make): (String, MakeScorer) = match &g.endpoint {
        Some(endpoint) => {
            let (endpoint, model) = (endpoint.clone(), g.model.clone());
            (
                format!("ollama {endpoint} {model} {}", g.timeout_ms),
                Box::new(move || {
                    bulwark_guard::ollama::Ollama::new(&endpoint, &model, timeout)
                        .map(|o| Arc::new(o) as Arc<dyn Scorer>)
                        .map_err(|e| e.to_string())
                }),
            )
        }
        None => {
            let dir = model_dir(&g.model, state_dir)
                .ok_or_else(|| format!("no state directory to find the model {:?} in", g.model))?;
            let (_, kind) = bulwark_guard::Kind::from_model_name(&g.model);
            (
                format!("local {} {kind:?}", dir.display()),
                Box::new(move || {
                    bulwark_guard::Guard::load_kind(&dir, kind)
                        .map(|m| Arc::new(m) as Arc<dyn Scorer>)
                        .map_err(|e| format!("{e}; install it with `bulwark guard install`"))
                }),
            )
        }
    };
    let mut map = match runners().lock() {
        Ok(m) => m,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(r) = map.get(&key) {
        return Ok(Arc::clone(r));
    }
    let scorer = make()?;
    // Two workers at most: each window is single-threaded matrix work, and the machines
    // this runs on have few cores that the rest of the gateway needs too.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let r = Arc::new(Runner::start(scorer, workers, QUEUE));
    map.insert(key, Arc::clone(&r));
    Ok(r)
}
