#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use bulwark_engine::{Call, Decision, Engine, Now, State};
use bulwark_policy::{Policy, load_str};
use serde_json::Value;

pub struct Harness {
    pub engine: Engine,
    pub state: State,
    pub now: u64,
}

impl Harness {
    pub fn default_policy() -> Harness {
        Harness::with(Policy::builtin().unwrap())
    }

    pub fn yaml(yaml: &str) -> Harness {
        Harness::with(load_str("test.yaml", yaml).unwrap_or_else(|e| panic!("{e}")))
    }

    pub fn with(policy: Policy) -> Harness {
        let engine = Engine::new(policy);
        let state = State::new(engine.policy());
        Harness {
            engine,
            state,
            now: 0,
        }
    }

    pub fn eval(&mut self, call: &Call) -> Decision {
        self.engine
            .evaluate(call, &mut self.state, Now::at(self.now))
    }

    pub fn req(&mut self, session: &str, tool: &str, args: Value) -> Decision {
        self.eval(&Call::request(session, tool, args))
    }

    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }
}
