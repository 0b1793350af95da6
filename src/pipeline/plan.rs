//! The plan most measuring commands declare: latscope's own verdict
//! (`--fail-if`, `--on-threshold`/`--on-end`, `--load`, the output files)
//! and memory locked or the run fails. Written once so that a verdict
//! option reaches every such command alike.

use super::{Plan, PrepareSpec, Presentation};
use crate::settings::VerdictSettings;

impl Plan {
    /// The plan of a command measuring on `cpus` with `verdict`, memory
    /// locked (`lock_memory`: a failing mlockall is an error) and
    /// `/dev/cpu_dma_latency` held when asked; no drop-in break crossings.
    pub fn measuring(
        verdict: &VerdictSettings,
        lock_memory: bool,
        hold_dma_latency: bool,
        cpus: Vec<usize>,
        presentation: Presentation,
    ) -> Plan {
        Plan {
            prepare: PrepareSpec {
                lock_memory,
                require_mlock: true,
                hold_dma_latency,
                loads: verdict.loads.clone(),
                cpus,
            },
            fail_if: verdict.fail_if.clone(),
            actions: verdict.actions.clone(),
            breaks: None,
            outputs: verdict.outputs.clone(),
            presentation,
        }
    }
}
